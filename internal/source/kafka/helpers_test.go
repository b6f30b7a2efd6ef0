package kafka

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

const testTopic = "events"

var (
	windowStart = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	windowEnd   = windowStart.Add(time.Hour)
)

// newCluster starts a one-broker kfake cluster with the topic's three
// partitions and returns its addresses.
func newCluster(t *testing.T, opts ...kfake.Opt) []string {
	t.Helper()
	cluster, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(3, testTopic)}, opts...)...)
	if err != nil {
		t.Fatalf("starting kfake: %v", err)
	}
	t.Cleanup(cluster.Close)
	return cluster.ListenAddrs()
}

// newSource is New for the test window, closed when the test ends.
func newSource(t *testing.T, cfg Config) *Source {
	t.Helper()
	src, err := New(cfg, windowStart, windowEnd)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(src.Close)
	return src
}

// record is one record to produce: on partition, timestamped at from the
// window start.
type record struct {
	partition int32
	at        time.Duration
}

// produce writes records in order, so that records on one partition take
// consecutive offsets in the order given.
func produce(t *testing.T, brokers []string, records []record, opts ...kgo.Opt) {
	t.Helper()
	if len(records) == 0 {
		return
	}
	client, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.DefaultProduceTopic(testTopic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	}, opts...)...)
	if err != nil {
		t.Fatalf("creating producer: %v", err)
	}
	defer client.Close()
	batch := make([]*kgo.Record, len(records))
	for i, r := range records {
		batch[i] = &kgo.Record{Partition: r.partition, Timestamp: windowStart.Add(r.at), Value: []byte("tuple")}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := client.ProduceSync(ctx, batch...).FirstErr(); err != nil {
		t.Fatalf("producing: %v", err)
	}
}

// pki is a CA with a server certificate for 127.0.0.1 and a client
// certificate it issued.
type pki struct {
	caPEM                       []byte
	pool                        *x509.CertPool
	server                      tls.Certificate
	clientCertPEM, clientKeyPEM []byte
	client                      tls.Certificate
}

// Certificates are valid over fixed dates, so that the tests read no clock
// either.
var (
	notBefore = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	notAfter  = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
)

func newPKI(t *testing.T) pki {
	t.Helper()
	caKey := newKey(t)
	caTemplate := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "laxity test CA"},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, caKey.Public(), caKey)
	if err != nil {
		t.Fatalf("creating the CA: %v", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatalf("parsing the CA: %v", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	issue := func(serial int64, name string, usage x509.ExtKeyUsage, ips []net.IP) (certPEM, keyPEM []byte, pair tls.Certificate) {
		key := newKey(t)
		der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: name},
			NotBefore:    notBefore,
			NotAfter:     notAfter,
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
			IPAddresses:  ips,
		}, ca, key.Public(), caKey)
		if err != nil {
			t.Fatalf("issuing %s: %v", name, err)
		}
		keyDER, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			t.Fatalf("marshaling the key of %s: %v", name, err)
		}
		certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
		keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
		pair, err = tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatalf("loading %s: %v", name, err)
		}
		return certPEM, keyPEM, pair
	}
	_, _, server := issue(2, "broker", x509.ExtKeyUsageServerAuth, []net.IP{net.IPv4(127, 0, 0, 1)})
	clientCert, clientKey, client := issue(3, "laxity", x509.ExtKeyUsageClientAuth, nil)
	return pki{
		caPEM:         pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pool:          pool,
		server:        server,
		clientCertPEM: clientCert,
		clientKeyPEM:  clientKey,
		client:        client,
	}
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("generating a key: %v", err)
	}
	return key
}
