package kafka

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// The SASL mechanisms a Source can authenticate with.
const (
	MechanismPlain       = "PLAIN"
	MechanismSCRAMSHA256 = "SCRAM-SHA-256"
	MechanismSCRAMSHA512 = "SCRAM-SHA-512"
)

// Config says where a query's topic is and how to reach it.
type Config struct {
	// Brokers are the bootstrap brokers, host:port (the port defaults to 9092).
	Brokers []string
	// Topic is the topic that carries the query's tuples.
	Topic string
	// TLS is the client's TLS configuration; nil means plaintext.
	TLS *tls.Config
	// SASL is the authentication; nil means none.
	SASL *SASL
}

// SASL is a username and password for one SASL mechanism.
type SASL struct {
	// Mechanism is MechanismPlain, MechanismSCRAMSHA256 or MechanismSCRAMSHA512.
	Mechanism string
	Username  string
	Password  string
}

// Validate reports the first field of c that cannot work: no brokers, an
// empty broker, a topic name Kafka rejects, an incomplete SASL, or SASL
// PLAIN without TLS, which would send the password in clear.
func (c Config) Validate() error {
	if len(c.Brokers) == 0 {
		return errors.New("kafka config: brokers: at least one broker is required")
	}
	for i, broker := range c.Brokers {
		if strings.TrimSpace(broker) == "" {
			return fmt.Errorf("kafka config: brokers[%d]: must not be empty", i)
		}
	}
	if err := validateTopic(c.Topic); err != nil {
		return fmt.Errorf("kafka config: topic: %w", err)
	}
	if c.SASL == nil {
		return nil
	}
	switch {
	case c.SASL.mechanism() == nil:
		return fmt.Errorf("kafka config: sasl.mechanism: %w", unsupportedMechanism(c.SASL.Mechanism))
	case c.SASL.Username == "":
		return errors.New("kafka config: sasl.username: must not be empty")
	case c.SASL.Password == "":
		return errors.New("kafka config: sasl.password: must not be empty")
	case c.SASL.Mechanism == MechanismPlain && c.TLS == nil:
		return errors.New("kafka config: sasl.mechanism: PLAIN sends the password in clear, so it needs TLS: set ca.crt, tls.crt and tls.key, or tls.enabled, or use SCRAM-SHA-256 or SCRAM-SHA-512")
	}
	return nil
}

// maxTopicLength is Kafka's limit on a topic name.
const maxTopicLength = 249

// validateTopic applies Kafka's rules for topic names, so that a typo is
// reported here rather than as an unknown topic at the first poll, and so
// that the name is safe in Spark's offsets JSON.
func validateTopic(topic string) error {
	switch {
	case topic == "":
		return errors.New("must not be empty")
	case len(topic) > maxTopicLength:
		return fmt.Errorf("must be at most %d characters, got %d", maxTopicLength, len(topic))
	case topic == "." || topic == "..":
		return fmt.Errorf("%q is not a valid topic name", topic)
	}
	for _, r := range topic {
		legal := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
		if !legal {
			return fmt.Errorf("%q holds %q; Kafka allows only ASCII letters, digits, '.', '_' and '-'", topic, r)
		}
	}
	return nil
}

// mechanism is the franz-go mechanism for s, nil for an unsupported name.
func (s SASL) mechanism() sasl.Mechanism {
	switch s.Mechanism {
	case MechanismPlain:
		return plain.Auth{User: s.Username, Pass: s.Password}.AsMechanism()
	case MechanismSCRAMSHA256:
		return scram.Auth{User: s.Username, Pass: s.Password}.AsSha256Mechanism()
	case MechanismSCRAMSHA512:
		return scram.Auth{User: s.Username, Pass: s.Password}.AsSha512Mechanism()
	}
	return nil
}

func unsupportedMechanism(name string) error {
	return fmt.Errorf("unsupported mechanism %q; want %s, %s or %s",
		name, MechanismPlain, MechanismSCRAMSHA256, MechanismSCRAMSHA512)
}

// The keys ConfigFromSecret reads; they follow the kubernetes.io/tls Secret
// type for the certificates.
const (
	keyCA            = "ca.crt"
	keyTLSEnabled    = "tls.enabled"
	keyClientCert    = "tls.crt"
	keyClientKey     = "tls.key"
	keySASLMechanism = "sasl.mechanism"
	keySASLUsername  = "sasl.username"
	keySASLPassword  = "sasl.password"
)

// ConfigFromSecret returns the Config for topic on brokers with the TLS and
// SASL settings held in a Kubernetes Secret's data (taken as a plain map, so
// that this package imports no Kubernetes package):
//
//   - ca.crt: PEM CA certificates to verify the brokers with; enables TLS.
//   - tls.crt and tls.key: a PEM client certificate and its key, both or
//     neither; enable TLS too, verified against the system roots when
//     ca.crt is absent.
//   - tls.enabled: "true" enables TLS verified against the system roots,
//     for brokers whose certificates a public CA signed; "false" is the
//     same as leaving it out.
//   - sasl.mechanism, sasl.username and sasl.password: all three or none.
//
// Values are used byte for byte: a trailing newline in a password is part of
// it. Other keys are ignored. Errors name the key, and the result is
// validated as by Config.Validate.
func ConfigFromSecret(brokers []string, topic string, data map[string][]byte) (Config, error) {
	tlsConfig, err := tlsFromSecret(data)
	if err != nil {
		return Config{}, err
	}
	auth, err := saslFromSecret(data)
	if err != nil {
		return Config{}, err
	}
	cfg := Config{Brokers: brokers, Topic: topic, TLS: tlsConfig, SASL: auth}
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

func tlsFromSecret(data map[string][]byte) (*tls.Config, error) {
	ca, hasCA := data[keyCA]
	cert, hasCert := data[keyClientCert]
	key, hasKey := data[keyClientKey]
	switch {
	case hasCert && !hasKey:
		return nil, fmt.Errorf("secret key %q is missing; %q needs it", keyClientKey, keyClientCert)
	case hasKey && !hasCert:
		return nil, fmt.Errorf("secret key %q is missing; %q needs it", keyClientCert, keyClientKey)
	}
	enabled := false
	if v, ok := data[keyTLSEnabled]; ok {
		switch strings.TrimSpace(string(v)) {
		case "true":
			enabled = true
		case "false":
		default:
			return nil, fmt.Errorf("secret key %q: want true or false, got %q", keyTLSEnabled, v)
		}
	}
	if !hasCA && !hasCert && !enabled {
		return nil, nil
	}
	config := &tls.Config{}
	if hasCA {
		pool, err := certPool(ca)
		if err != nil {
			return nil, fmt.Errorf("secret key %q: %w", keyCA, err)
		}
		config.RootCAs = pool
	}
	if hasCert {
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("secret keys %q and %q: %w", keyClientCert, keyClientKey, err)
		}
		config.Certificates = []tls.Certificate{pair}
	}
	return config, nil
}

// certPool parses every PEM block of bundle as a certificate. Unlike
// x509.CertPool.AppendCertsFromPEM, it rejects a bundle with a broken
// certificate instead of silently dropping it.
func certPool(bundle []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	found := 0
	for rest := bundle; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		found++
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("PEM block %d is a %q, want a CERTIFICATE", found, block.Type)
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("PEM block %d: %w", found, err)
		}
		pool.AddCert(cert)
	}
	if found == 0 {
		return nil, errors.New("no PEM certificate found")
	}
	return pool, nil
}

func saslFromSecret(data map[string][]byte) (*SASL, error) {
	keys := []string{keySASLMechanism, keySASLUsername, keySASLPassword}
	var present, missing []string
	for _, key := range keys {
		if _, ok := data[key]; ok {
			present = append(present, key)
		} else {
			missing = append(missing, key)
		}
	}
	switch {
	case len(present) == 0:
		return nil, nil
	case len(missing) > 0:
		return nil, fmt.Errorf("secret key %q is missing; %q needs it", missing[0], present[0])
	}
	for _, key := range keys {
		if len(data[key]) == 0 {
			return nil, fmt.Errorf("secret key %q is empty", key)
		}
	}
	auth := &SASL{
		Mechanism: string(data[keySASLMechanism]),
		Username:  string(data[keySASLUsername]),
		Password:  string(data[keySASLPassword]),
	}
	if auth.mechanism() == nil {
		return nil, fmt.Errorf("secret key %q: %w", keySASLMechanism, unsupportedMechanism(auth.Mechanism))
	}
	return auth, nil
}
