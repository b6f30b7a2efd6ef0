package objectstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/laxity-dev/laxity/internal/source"
)

var _ source.Source = (*Source)(nil)

// arrivedAt is one expectation of Arrived: at now, want tuples.
type arrivedAt struct {
	now  time.Duration
	want int64
}

// checkArrived checks Arrived at each of checks, now taken from the window
// start.
func checkArrived(t *testing.T, src *Source, checks []arrivedAt) {
	t.Helper()
	for _, c := range checks {
		got, err := src.Arrived(context.Background(), windowStart.Add(c.now))
		if err != nil {
			t.Fatalf("Arrived(start%+v): %v", c.now, err)
		}
		if got != c.want {
			t.Errorf("Arrived(start%+v) = %d, want %d", c.now, got, c.want)
		}
	}
}

// TestArrivedByLastModified places objects by their upload time: before,
// at and inside both bounds of the window, and outside the prefix.
func TestArrivedByLastModified(t *testing.T) {
	st := newStore(t)
	for _, o := range []struct {
		key string
		at  time.Duration
	}{
		{"clicks/before", -time.Millisecond},
		{"clicks/at-start", 0},
		{"clicks/inside", 30 * time.Minute},
		{"clicks/last", time.Hour - time.Millisecond},
		{"clicks/at-end", time.Hour},
		{"views/inside", 10 * time.Minute},
		{"clicks", 20 * time.Minute}, // not under the prefix "clicks/"
	} {
		st.put(t, o.key, 10, windowStart.Add(o.at))
	}
	src := newSource(t, st.config())
	checkArrived(t, src, []arrivedAt{
		{-time.Hour, 0},
		{0, 1},
		{30*time.Minute - time.Millisecond, 1},
		{30 * time.Minute, 2},
		{2 * time.Hour, 3},
	})
	if got := src.Skipped(); got != 0 {
		t.Errorf("Skipped = %d without a key time layout, want 0", got)
	}
}

// TestArrivedByKeyTime places objects by the time in their keys, whatever
// their upload time, and skips keys that carry none.
func TestArrivedByKeyTime(t *testing.T) {
	for _, layout := range []struct {
		name, layout string
		key          func(time.Time, string) string
		// skipped is what Skipped counts: a sortable layout lists only
		// the window's range of keys.
		skipped int64
	}{
		{"sortable", testLayout, func(at time.Time, rest string) string { return testPrefix + at.Format(testLayout) + rest }, 1},
		{"day first", "02-01-2006/15-04-05", func(at time.Time, rest string) string { return testPrefix + at.Format("02-01-2006/15-04-05") + rest }, 4},
	} {
		t.Run(layout.name, func(t *testing.T) {
			st := newStore(t)
			at := windowStart.Add
			st.put(t, layout.key(at(-time.Second), "-before.json"), 1, at(time.Minute))
			st.put(t, layout.key(at(0), "-first.json"), 1, at(2*time.Minute))
			st.put(t, layout.key(at(20*time.Minute), "-early.json"), 1, at(10*time.Minute))
			// Uploaded long after the window, in time for its last second.
			st.put(t, layout.key(at(time.Hour-time.Second), "-late.json"), 1, at(2*time.Hour))
			st.put(t, layout.key(at(time.Hour), "-after.json"), 1, at(3*time.Minute))
			// Keys that carry no time in the layout.
			st.put(t, layout.key(at(30*time.Minute), "")[:len(testPrefix)+14]+"7x-00.json", 1, at(4*time.Minute))
			st.put(t, testPrefix+"manifest.json", 1, at(5*time.Minute))
			st.put(t, testPrefix+"0000.json", 1, at(5*time.Minute))
			st.put(t, testPrefix+"short", 1, at(5*time.Minute))

			cfg := st.config()
			cfg.KeyTimeLayout = layout.layout
			src := newSource(t, cfg)
			checkArrived(t, src, []arrivedAt{
				{time.Minute, 0},
				{2 * time.Minute, 1},
				{10 * time.Minute, 2},
				{time.Hour, 2},
				{2 * time.Hour, 3},
			})
			if got := src.Skipped(); got != layout.skipped {
				t.Errorf("Skipped = %d, want %d", got, layout.skipped)
			}
		})
	}
}

// TestArrivedBytesPerTuple rounds every object's size up to whole tuples,
// and counts an empty object as one.
func TestArrivedBytesPerTuple(t *testing.T) {
	st := newStore(t)
	for i, size := range []int{0, 1, 99, 100, 101, 250} {
		st.put(t, testPrefix+strings.Repeat("o", i+1), size, windowStart.Add(time.Minute))
	}
	cfg := st.config()
	cfg.TuplesPerObject, cfg.BytesPerTuple = 0, 100
	// 1 + 1 + 1 + 1 + 2 + 3.
	checkArrived(t, newSource(t, cfg), []arrivedAt{{time.Hour, 9}})
}

// TestSettleHidesFreshObjects counts an object only Settle after its
// upload.
func TestSettleHidesFreshObjects(t *testing.T) {
	st := newStore(t)
	st.put(t, testPrefix+"a", 1, windowStart.Add(10*time.Minute))
	st.put(t, testPrefix+"b", 1, windowStart.Add(10*time.Minute+500*time.Millisecond))
	cfg := st.config()
	cfg.Settle = 5 * time.Minute
	checkArrived(t, newSource(t, cfg), []arrivedAt{
		{10 * time.Minute, 0},
		{15*time.Minute - time.Millisecond, 0},
		{15 * time.Minute, 1},
		{15*time.Minute + 499*time.Millisecond, 1},
		{15*time.Minute + 500*time.Millisecond, 2},
	})
}

// TestCredentials reaches the store with the static credentials, with the
// SDK's default chain from the environment, and fails with a wrong access
// key or secret, which the test server checks.
func TestCredentials(t *testing.T) {
	st := newStore(t)
	st.put(t, testPrefix+"a", 1, windowStart.Add(time.Minute))
	arrived := func(t *testing.T, cfg Config) (int64, error) {
		t.Helper()
		return newSource(t, cfg).Arrived(context.Background(), windowEnd)
	}
	t.Run("from a secret", func(t *testing.T) {
		creds, err := CredentialsFromSecret(map[string][]byte{
			"accessKeyID":     []byte(testCreds.AccessKeyID),
			"secretAccessKey": []byte(testCreds.SecretAccessKey),
		})
		if err != nil {
			t.Fatalf("CredentialsFromSecret: %v", err)
		}
		cfg := st.config()
		cfg.Credentials = creds
		if got, err := arrived(t, cfg); err != nil || got != 1 {
			t.Errorf("Arrived = %d, %v; want 1", got, err)
		}
	})
	t.Run("default chain", func(t *testing.T) {
		t.Setenv("AWS_ACCESS_KEY_ID", testCreds.AccessKeyID)
		t.Setenv("AWS_SECRET_ACCESS_KEY", testCreds.SecretAccessKey)
		t.Setenv("AWS_REGION", testRegion)
		t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
		t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
		cfg := st.config()
		cfg.Credentials, cfg.Region = nil, ""
		if got, err := arrived(t, cfg); err != nil || got != 1 {
			t.Errorf("Arrived = %d, %v; want 1", got, err)
		}
	})
	for _, wrong := range []struct {
		name    string
		creds   Credentials
		wantErr string
	}{
		{"wrong secret", Credentials{AccessKeyID: testCreds.AccessKeyID, SecretAccessKey: "wrong"}, "SignatureDoesNotMatch"},
		{"wrong access key", Credentials{AccessKeyID: "AKIDOTHER", SecretAccessKey: testCreds.SecretAccessKey}, "InvalidAccessKeyId"},
	} {
		t.Run(wrong.name, func(t *testing.T) {
			cfg := st.config()
			cfg.Credentials = &wrong.creds
			_, err := arrived(t, cfg)
			if err == nil {
				t.Fatal("Arrived succeeded")
			}
			for _, want := range []string{`objectstore bucket "events": listing prefix "clicks/"`, wrong.wantErr} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Arrived error = %q, want it to contain %q", err, want)
				}
			}
		})
	}
}

func TestUnknownBucket(t *testing.T) {
	st := newStore(t)
	cfg := st.config()
	cfg.Bucket = "no-such-bucket"
	_, err := newSource(t, cfg).Arrived(context.Background(), windowEnd)
	if want := `objectstore bucket "no-such-bucket": listing prefix "clicks/"`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Arrived error = %v, want one containing %q", err, want)
	}
}

func TestNewErrors(t *testing.T) {
	valid := Config{Region: testRegion, Bucket: testBucket, TuplesPerObject: 1}
	tests := []struct {
		name       string
		cfg        Config
		start, end time.Time
		wantErr    string
	}{
		{"invalid config", Config{Bucket: testBucket}, windowStart, windowEnd, "objectstore config: tuplesPerObject or bytesPerTuple"},
		{"end at start", valid, windowStart, windowStart, "window end: must be after the window start"},
		{"end before start", valid, windowEnd, windowStart, "window end: must be after the window start"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src, err := New(tc.cfg, tc.start, tc.end)
			if err == nil {
				t.Fatalf("New = %v, want an error containing %q", src, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("New error = %q, want it to contain %q", err, tc.wantErr)
			}
		})
	}
	t.Run("no region anywhere", func(t *testing.T) {
		t.Setenv("AWS_REGION", "")
		t.Setenv("AWS_DEFAULT_REGION", "")
		t.Setenv("AWS_PROFILE", "")
		t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
		t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
		cfg := valid
		cfg.Region = ""
		_, err := New(cfg, windowStart, windowEnd)
		if want := "objectstore config: region: not set"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New error = %v, want one containing %q", err, want)
		}
	})
}

func TestNilSource(t *testing.T) {
	var src *Source
	if _, err := src.Arrived(context.Background(), windowEnd); err == nil {
		t.Error("Arrived on a nil source succeeded")
	}
	if _, _, err := src.Slice(context.Background(), windowEnd, nil, 1); err == nil {
		t.Error("Slice on a nil source succeeded")
	}
	if got := src.Skipped(); got != 0 {
		t.Errorf("Skipped on a nil source = %d", got)
	}
}
