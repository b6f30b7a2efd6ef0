package kafka

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/laxity-dev/laxity/internal/source"
)

var _ source.Source = (*Source)(nil)

// TestArrived produces records before, inside and after the window on three
// partitions, one step at a time, and checks after each step the window's
// offsets and the count of arrived records. Offsets are noted as p:offset.
func TestArrived(t *testing.T) {
	brokers := newCluster(t)
	src := newSource(t, Config{Brokers: brokers, Topic: testTopic})
	steps := []struct {
		name    string
		records []record
		want    Offsets
	}{{
		name: "nothing produced",
		want: Offsets{0: {0, 0}, 1: {0, 0}, 2: {0, 0}},
	}, {
		name: "records before and inside the window, partition 2 empty",
		records: []record{
			{0, -10 * time.Minute}, {0, -time.Millisecond}, // 0:0, 0:1 before
			{0, 0}, {0, 30 * time.Minute}, {0, time.Hour - time.Millisecond}, // 0:2..0:4
			{1, time.Minute}, {1, 2 * time.Minute}, // 1:0, 1:1
		},
		// No record has reached the window end: the window runs to the
		// high watermarks.
		want: Offsets{0: {2, 5}, 1: {0, 2}, 2: {0, 0}},
	}, {
		name: "partition 0 passes the window end, partition 1 still inside",
		records: []record{
			{0, time.Hour}, {0, time.Hour + time.Minute}, // 0:5 is End[0]; the end is exclusive
			{1, 59 * time.Minute}, // 1:2
		},
		want: Offsets{0: {2, 5}, 1: {0, 3}, 2: {0, 0}},
	}, {
		name: "late records: offsets, not timestamps, decide",
		records: []record{
			{0, 10 * time.Minute}, // 0:7, after End[0]: a later window's
			{1, -5 * time.Minute}, // 1:3, before End[1]: this window's
			{2, -time.Minute},     // 2:0, Start[2] still undecided
		},
		want: Offsets{0: {2, 5}, 1: {0, 4}, 2: {1, 1}},
	}, {
		name: "every partition passes the window end",
		records: []record{
			{2, 5 * time.Minute},                         // 2:1 is Start[2]
			{1, 2 * time.Hour},                           // 1:4 is End[1]
			{2, 90 * time.Minute},                        // 2:2 is End[2]
			{1, 30 * time.Minute}, {2, 30 * time.Minute}, // late, after the ends
		},
		want: Offsets{0: {2, 5}, 1: {0, 4}, 2: {1, 2}},
	}}
	for _, step := range steps {
		produce(t, brokers, step.records)
		got, err := src.Snapshot(context.Background())
		if err != nil {
			t.Fatalf("%s: Snapshot: %v", step.name, err)
		}
		if diff := cmp.Diff(step.want, got); diff != "" {
			t.Errorf("%s: Snapshot (-want +got):\n%s", step.name, diff)
		}
		// now is ignored: the same count at any instant.
		for _, now := range []time.Time{{}, windowStart, windowEnd.Add(time.Hour)} {
			arrived, err := src.Arrived(context.Background(), now)
			if err != nil {
				t.Fatalf("%s: Arrived(%v): %v", step.name, now, err)
			}
			if want := Total(step.want); arrived != want {
				t.Errorf("%s: Arrived(%v) = %d, want %d", step.name, now, arrived, want)
			}
		}
	}

	// A source built after the fact, as after an operator restart, looks
	// every bound up afresh and agrees.
	fresh := newSource(t, Config{Brokers: brokers, Topic: testTopic})
	got, err := fresh.Snapshot(context.Background())
	if err != nil {
		t.Fatalf("fresh Snapshot: %v", err)
	}
	if diff := cmp.Diff(steps[len(steps)-1].want, got); diff != "" {
		t.Errorf("fresh Snapshot (-want +got):\n%s", diff)
	}
}

// TestConcurrentArrived polls one source from several goroutines while
// records arrive: each poller sees a count that never decreases, and all
// agree once the producing is done.
func TestConcurrentArrived(t *testing.T) {
	brokers := newCluster(t)
	src := newSource(t, Config{Brokers: brokers, Topic: testTopic})
	const pollers, polls = 4, 20
	var wg sync.WaitGroup
	errs := make(chan error, pollers)
	for range pollers {
		wg.Go(func() {
			prev := int64(0)
			for range polls {
				arrived, err := src.Arrived(context.Background(), windowEnd)
				switch {
				case err != nil:
					errs <- err
					return
				case arrived < prev:
					errs <- fmt.Errorf("Arrived = %d after %d", arrived, prev)
					return
				}
				prev = arrived
			}
		})
	}
	for i := range 10 {
		produce(t, brokers, []record{{int32(i % 3), time.Duration(i) * time.Minute}})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if arrived, err := src.Arrived(context.Background(), windowEnd); err != nil || arrived != 10 {
		t.Errorf("Arrived = %d, %v; want 10", arrived, err)
	}
}

// TestWindowBoundsInMilliseconds checks that a bound between two Kafka
// milliseconds counts from the later one.
func TestWindowBoundsInMilliseconds(t *testing.T) {
	brokers := newCluster(t)
	produce(t, brokers, []record{{0, 0}, {0, time.Millisecond}, {0, 2 * time.Millisecond}})
	src, err := New(Config{Brokers: brokers, Topic: testTopic},
		windowStart.Add(time.Microsecond), windowStart.Add(2*time.Millisecond-time.Microsecond))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer src.Close()
	got, err := src.Snapshot(context.Background())
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	want := Offsets{0: {1, 2}, 1: {0, 0}, 2: {0, 0}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Snapshot (-want +got):\n%s", diff)
	}
}

func TestNewErrors(t *testing.T) {
	valid := Config{Brokers: []string{"127.0.0.1:9092"}, Topic: testTopic}
	tests := []struct {
		name       string
		cfg        Config
		start, end time.Time
		wantErr    string
	}{
		{"invalid config", Config{Topic: testTopic}, windowStart, windowEnd, "kafka config: brokers: at least one broker is required"},
		{"end at start", valid, windowStart, windowStart, "window end: must be after the window start"},
		{"end before start", valid, windowEnd, windowStart, "window end: must be after the window start"},
		{"start before the epoch", valid, time.Unix(-1, 0), windowEnd, "window start: must not be before the Unix epoch"},
		{"end past Kafka's last millisecond", valid, windowStart, time.Unix(1<<62, 0), "window end: must not be after"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src, err := New(tc.cfg, tc.start, tc.end)
			if err == nil {
				src.Close()
				t.Fatalf("New succeeded, want an error containing %q", tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("New error = %q, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestSnapshotUnknownTopic(t *testing.T) {
	brokers := newCluster(t)
	src := newSource(t, Config{Brokers: brokers, Topic: "no-such-topic"})
	_, err := src.Arrived(context.Background(), windowEnd)
	if err == nil {
		t.Fatal("Arrived succeeded on a topic that does not exist")
	}
	if want := `kafka topic "no-such-topic": listing end offsets`; !strings.Contains(err.Error(), want) {
		t.Errorf("Arrived error = %q, want it to contain %q", err, want)
	}
}

func TestNilSource(t *testing.T) {
	var src *Source
	if _, err := src.Arrived(context.Background(), windowEnd); err == nil {
		t.Error("Arrived on a nil source succeeded")
	}
	src.Close()
}

// TestSASL authenticates against a kfake cluster with a user for every
// supported mechanism, and fails with a wrong password. SCRAM runs over
// plaintext; PLAIN, which sends the password as is, only over TLS.
func TestSASL(t *testing.T) {
	const user, password = "laxity", "s3cret"
	certs := newPKI(t)
	plaintext := newCluster(t,
		kfake.EnableSASL(),
		kfake.Superuser(MechanismSCRAMSHA256, user, password),
		kfake.Superuser(MechanismSCRAMSHA512, user, password),
	)
	overTLS := newCluster(t,
		kfake.TLS(&tls.Config{Certificates: []tls.Certificate{certs.server}}),
		kfake.EnableSASL(),
		kfake.Superuser(MechanismPlain, user, password),
	)
	records := []record{{0, time.Minute}, {1, 2 * time.Minute}, {2, -time.Minute}}
	produce(t, plaintext, records, kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha256Mechanism()))
	produce(t, overTLS, records, kgo.SASL(plain.Auth{User: user, Pass: password}.AsMechanism()), kgo.DialTLSConfig(&tls.Config{RootCAs: certs.pool}))
	for _, tc := range []struct {
		mechanism string
		brokers   []string
		ca        []byte
	}{
		{MechanismPlain, overTLS, certs.caPEM},
		{MechanismSCRAMSHA256, plaintext, nil},
		{MechanismSCRAMSHA512, plaintext, nil},
	} {
		t.Run(tc.mechanism, func(t *testing.T) {
			data := map[string][]byte{
				"sasl.mechanism": []byte(tc.mechanism),
				"sasl.username":  []byte(user),
				"sasl.password":  []byte(password),
			}
			if tc.ca != nil {
				data["ca.crt"] = tc.ca
			}
			cfg, err := ConfigFromSecret(tc.brokers, testTopic, data)
			if err != nil {
				t.Fatalf("ConfigFromSecret: %v", err)
			}
			arrived, err := newSource(t, cfg).Arrived(context.Background(), windowEnd)
			if err != nil {
				t.Fatalf("Arrived: %v", err)
			}
			if arrived != 2 {
				t.Errorf("Arrived = %d, want 2", arrived)
			}
		})
	}
	t.Run("PLAIN without TLS", func(t *testing.T) {
		_, err := New(Config{Brokers: plaintext, Topic: testTopic, SASL: &SASL{Mechanism: MechanismPlain, Username: user, Password: password}}, windowStart, windowEnd)
		if err == nil || !strings.Contains(err.Error(), "sasl.mechanism: PLAIN sends the password in clear") {
			t.Errorf("New = %v, want a refusal of PLAIN without TLS", err)
		}
	})
	t.Run("wrong password", func(t *testing.T) {
		src := newSource(t, Config{Brokers: plaintext, Topic: testTopic,
			SASL: &SASL{Mechanism: MechanismSCRAMSHA512, Username: user, Password: "wrong"}})
		_, err := src.Arrived(context.Background(), windowEnd)
		if err == nil {
			t.Fatal("Arrived succeeded with a wrong password")
		}
		if want := `kafka topic "events"`; !strings.Contains(err.Error(), want) {
			t.Errorf("Arrived error = %q, want it to contain %q", err, want)
		}
	})
}

// TestMutualTLS reaches a kfake cluster that requires client certificates,
// with the TLS settings read from a Secret's data.
func TestMutualTLS(t *testing.T) {
	certs := newPKI(t)
	brokers := newCluster(t, kfake.TLS(&tls.Config{
		Certificates: []tls.Certificate{certs.server},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    certs.pool,
	}))
	produce(t, brokers, []record{{0, time.Minute}, {0, 2 * time.Minute}, {2, 3 * time.Minute}},
		kgo.DialTLSConfig(&tls.Config{RootCAs: certs.pool, Certificates: []tls.Certificate{certs.client}}))
	cfg, err := ConfigFromSecret(brokers, testTopic, map[string][]byte{
		"ca.crt":  certs.caPEM,
		"tls.crt": certs.clientCertPEM,
		"tls.key": certs.clientKeyPEM,
	})
	if err != nil {
		t.Fatalf("ConfigFromSecret: %v", err)
	}
	arrived, err := newSource(t, cfg).Arrived(context.Background(), windowEnd)
	if err != nil {
		t.Fatalf("Arrived: %v", err)
	}
	if arrived != 3 {
		t.Errorf("Arrived = %d, want 3", arrived)
	}
}
