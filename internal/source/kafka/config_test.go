package kafka

import (
	"crypto/tls"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestConfigFromSecret(t *testing.T) {
	certs := newPKI(t)
	brokers := []string{"kafka-0.kafka:9093", "kafka-1.kafka:9093"}
	saslData := map[string][]byte{
		"sasl.mechanism": []byte("SCRAM-SHA-512"),
		"sasl.username":  []byte("laxity"),
		"sasl.password":  []byte("s3cret\n"),
	}
	tests := []struct {
		name string
		data map[string][]byte
		// wantRoots and wantClientCert say what TLS must hold; a nil TLS
		// is wanted when both are false.
		wantRoots, wantClientCert bool
		// wantSystemTLS wants TLS with neither: the system roots, no
		// client certificate.
		wantSystemTLS bool
		wantSASL      *SASL
	}{
		{name: "no data: plaintext", data: nil},
		{name: "unrelated keys are ignored", data: map[string][]byte{"username": []byte("x")}},
		{name: "ca.crt enables TLS", data: map[string][]byte{"ca.crt": certs.caPEM}, wantRoots: true},
		{
			name:           "a client certificate alone enables TLS with the system roots",
			data:           map[string][]byte{"tls.crt": certs.clientCertPEM, "tls.key": certs.clientKeyPEM},
			wantClientCert: true,
		},
		{
			name:          "tls.enabled alone enables TLS with the system roots",
			data:          map[string][]byte{"tls.enabled": []byte("true")},
			wantSystemTLS: true,
		},
		{
			name:          "PLAIN over TLS with the system roots",
			data:          map[string][]byte{"tls.enabled": []byte("true\n"), "sasl.mechanism": []byte("PLAIN"), "sasl.username": []byte("u"), "sasl.password": []byte("p")},
			wantSystemTLS: true,
			wantSASL:      &SASL{Mechanism: MechanismPlain, Username: "u", Password: "p"},
		},
		{
			name:     "SASL, the password byte for byte",
			data:     saslData,
			wantSASL: &SASL{Mechanism: MechanismSCRAMSHA512, Username: "laxity", Password: "s3cret\n"},
		},
		{
			name: "everything",
			data: map[string][]byte{
				"ca.crt": certs.caPEM, "tls.crt": certs.clientCertPEM, "tls.key": certs.clientKeyPEM,
				"sasl.mechanism": []byte("PLAIN"), "sasl.username": []byte("u"), "sasl.password": []byte("p"),
			},
			wantRoots: true, wantClientCert: true,
			wantSASL: &SASL{Mechanism: MechanismPlain, Username: "u", Password: "p"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ConfigFromSecret(brokers, testTopic, tc.data)
			if err != nil {
				t.Fatalf("ConfigFromSecret: %v", err)
			}
			if diff := cmp.Diff(brokers, cfg.Brokers); diff != "" || cfg.Topic != testTopic {
				t.Errorf("brokers (-want +got):\n%s\ntopic %q", diff, cfg.Topic)
			}
			if diff := cmp.Diff(tc.wantSASL, cfg.SASL); diff != "" {
				t.Errorf("SASL (-want +got):\n%s", diff)
			}
			if tc.wantSystemTLS {
				if cfg.TLS == nil || cfg.TLS.RootCAs != nil || len(cfg.TLS.Certificates) != 0 {
					t.Errorf("TLS = %+v, want TLS with the system roots and no client certificate", cfg.TLS)
				}
				return
			}
			if !tc.wantRoots && !tc.wantClientCert {
				if cfg.TLS != nil {
					t.Errorf("TLS = %+v, want nil", cfg.TLS)
				}
				return
			}
			if cfg.TLS == nil {
				t.Fatal("TLS = nil")
			}
			if got := cfg.TLS.RootCAs != nil && cfg.TLS.RootCAs.Equal(certs.pool); got != tc.wantRoots {
				t.Errorf("RootCAs is the test CA: %t, want %t", got, tc.wantRoots)
			}
			var wantCerts []tls.Certificate
			if tc.wantClientCert {
				wantCerts = []tls.Certificate{certs.client}
			}
			if len(cfg.TLS.Certificates) != len(wantCerts) ||
				len(wantCerts) == 1 && !cfg.TLS.Certificates[0].Leaf.Equal(wantCerts[0].Leaf) {
				t.Errorf("client certificates = %d, want the test client's: %t", len(cfg.TLS.Certificates), tc.wantClientCert)
			}
		})
	}
}

func TestConfigFromSecretErrors(t *testing.T) {
	certs := newPKI(t)
	keyAsCA := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1, 2, 3}})
	brokenCert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1, 2, 3}})
	// with is complete SASL data with key set to value, or removed for a nil value.
	with := func(key string, value []byte) map[string][]byte {
		data := map[string][]byte{
			"sasl.mechanism": []byte("PLAIN"),
			"sasl.username":  []byte("laxity"),
			"sasl.password":  []byte("s3cret"),
		}
		if value == nil {
			delete(data, key)
		} else {
			data[key] = value
		}
		return data
	}
	tests := []struct {
		name    string
		data    map[string][]byte
		wantErr string
	}{
		{"ca.crt empty", map[string][]byte{"ca.crt": {}}, `secret key "ca.crt": no PEM certificate found`},
		{"ca.crt not PEM", map[string][]byte{"ca.crt": []byte("not a certificate")}, `secret key "ca.crt": no PEM certificate found`},
		{"ca.crt holds a key", map[string][]byte{"ca.crt": keyAsCA}, `secret key "ca.crt": PEM block 1 is a "PRIVATE KEY", want a CERTIFICATE`},
		{"ca.crt with a broken certificate", map[string][]byte{"ca.crt": append(certs.caPEM, brokenCert...)}, `secret key "ca.crt": PEM block 2: x509:`},
		{"tls.crt without tls.key", map[string][]byte{"tls.crt": certs.clientCertPEM}, `secret key "tls.key" is missing`},
		{"tls.key without tls.crt", map[string][]byte{"tls.key": certs.clientKeyPEM}, `secret key "tls.crt" is missing`},
		{
			"tls.key not for tls.crt",
			map[string][]byte{"tls.crt": certs.clientCertPEM, "tls.key": pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1}})},
			`secret keys "tls.crt" and "tls.key": tls:`,
		},
		{"sasl.mechanism missing", with("sasl.mechanism", nil), `secret key "sasl.mechanism" is missing`},
		{"sasl.username missing", with("sasl.username", nil), `secret key "sasl.username" is missing`},
		{"sasl.password missing", with("sasl.password", nil), `secret key "sasl.password" is missing`},
		{"only sasl.password", map[string][]byte{"sasl.password": []byte("p")}, `secret key "sasl.mechanism" is missing; "sasl.password" needs it`},
		{"sasl.mechanism empty", with("sasl.mechanism", []byte{}), `secret key "sasl.mechanism" is empty`},
		{"sasl.username empty", with("sasl.username", []byte{}), `secret key "sasl.username" is empty`},
		{"sasl.password empty", with("sasl.password", []byte{}), `secret key "sasl.password" is empty`},
		{
			"sasl.mechanism unsupported", with("sasl.mechanism", []byte("GSSAPI")),
			`secret key "sasl.mechanism": unsupported mechanism "GSSAPI"; want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512`,
		},
		{"sasl.mechanism in lower case", with("sasl.mechanism", []byte("plain")), `secret key "sasl.mechanism": unsupported mechanism "plain"`},
		{"PLAIN without TLS", with("sasl.mechanism", []byte("PLAIN")), "sasl.mechanism: PLAIN sends the password in clear, so it needs TLS"},
		{"PLAIN with TLS turned off", with("tls.enabled", []byte("false")), "PLAIN sends the password in clear"},
		{"tls.enabled not a boolean", map[string][]byte{"tls.enabled": []byte("yes")}, `secret key "tls.enabled": want true or false, got "yes"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ConfigFromSecret([]string{"kafka:9092"}, testTopic, tc.data)
			if err == nil {
				t.Fatalf("ConfigFromSecret = %+v, want an error containing %q", cfg, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ConfigFromSecret error = %q, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

// TestConfigFromSecretValidates checks that what the Secret does not hold,
// the brokers and the topic, is validated too.
func TestConfigFromSecretValidates(t *testing.T) {
	if _, err := ConfigFromSecret(nil, testTopic, nil); err == nil || !strings.Contains(err.Error(), "kafka config: brokers:") {
		t.Errorf("no brokers: error = %v, want one naming brokers", err)
	}
	if _, err := ConfigFromSecret([]string{"kafka:9092"}, "", nil); err == nil || !strings.Contains(err.Error(), "kafka config: topic:") {
		t.Errorf("no topic: error = %v, want one naming topic", err)
	}
}

func TestConfigValidate(t *testing.T) {
	valid := func() Config {
		return Config{
			Brokers: []string{"kafka:9092"},
			Topic:   testTopic,
			SASL:    &SASL{Mechanism: MechanismSCRAMSHA256, Username: "u", Password: "p"},
		}
	}
	if err := valid().Validate(); err != nil {
		t.Fatalf("Validate of a valid config: %v", err)
	}
	tests := []struct {
		name    string
		change  func(*Config)
		wantErr string
	}{
		{"no brokers", func(c *Config) { c.Brokers = nil }, "kafka config: brokers: at least one broker is required"},
		{"blank broker", func(c *Config) { c.Brokers = append(c.Brokers, " ") }, "kafka config: brokers[1]: must not be empty"},
		{"no topic", func(c *Config) { c.Topic = "" }, "kafka config: topic: must not be empty"},
		{"topic too long", func(c *Config) { c.Topic = strings.Repeat("a", 250) }, "kafka config: topic: must be at most 249 characters, got 250"},
		{"topic dot", func(c *Config) { c.Topic = "." }, `kafka config: topic: "." is not a valid topic name`},
		{"topic dot dot", func(c *Config) { c.Topic = ".." }, `kafka config: topic: ".." is not a valid topic name`},
		{"topic with a space", func(c *Config) { c.Topic = "my events" }, `kafka config: topic: "my events" holds ' '`},
		{"topic with a quote", func(c *Config) { c.Topic = `ev"ents` }, `kafka config: topic: "ev\"ents" holds '"'`},
		{"SASL mechanism", func(c *Config) { c.SASL.Mechanism = "OAUTHBEARER" }, `kafka config: sasl.mechanism: unsupported mechanism "OAUTHBEARER"`},
		{"SASL username", func(c *Config) { c.SASL.Username = "" }, "kafka config: sasl.username: must not be empty"},
		{"SASL password", func(c *Config) { c.SASL.Password = "" }, "kafka config: sasl.password: must not be empty"},
		{"SASL PLAIN without TLS", func(c *Config) { c.SASL.Mechanism = MechanismPlain }, "kafka config: sasl.mechanism: PLAIN sends the password in clear"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := valid()
			tc.change(&cfg)
			err := cfg.Validate()
			if err == nil {
				t.Fatalf("Validate succeeded, want an error containing %q", tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Validate error = %q, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}
