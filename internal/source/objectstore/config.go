package objectstore

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Config says where a query's objects are, how to reach them and how to
// count their tuples.
type Config struct {
	// Endpoint is the store's base URL, such as http://minio.storage:9000;
	// empty means AWS S3's own endpoint for the region.
	Endpoint string
	// Region is the region requests are signed for; empty means the one the
	// SDK's default chain finds (AWS_REGION, the shared config file).
	Region string
	// Bucket holds the objects; only the keys that start with Prefix count.
	Bucket, Prefix string
	// PathStyle addresses the bucket in the URL's path, as most
	// S3-compatible stores want, instead of in the host name.
	PathStyle bool
	// Credentials sign the requests; nil means the SDK's default chain
	// (environment, shared files, web identity, instance metadata).
	Credentials *Credentials
	// TuplesPerObject counts every object as that many tuples. Exactly one
	// of TuplesPerObject and BytesPerTuple is positive.
	TuplesPerObject int64
	// BytesPerTuple counts an object of size bytes as ceil(size /
	// BytesPerTuple) tuples, at least one.
	BytesPerTuple int64
	// KeyTimeLayout, when set, is the Go time layout of the instant that
	// every key carries right after Prefix, such as 2006/01/02/15-04-05; the
	// instant, not the upload time, then places the object in the window.
	// Empty means the object's LastModified does.
	KeyTimeLayout string
	// Settle is how long after its LastModified an object is counted, at
	// least the longest upload, so that an object whose upload has begun is
	// listed by the time it counts.
	Settle time.Duration
}

// Credentials are static S3 credentials.
type Credentials struct {
	AccessKeyID     string
	SecretAccessKey string
	// SessionToken is set for temporary credentials only.
	SessionToken string
}

// Validate reports the first field of c that cannot work.
func (c Config) Validate() error {
	if c.Endpoint != "" {
		endpoint, err := url.Parse(c.Endpoint)
		switch {
		case err != nil:
			return fmt.Errorf("objectstore config: endpoint: %w", err)
		case endpoint.Scheme != "http" && endpoint.Scheme != "https":
			return fmt.Errorf("objectstore config: endpoint: %q: want an http or https URL", c.Endpoint)
		case endpoint.Host == "":
			return fmt.Errorf("objectstore config: endpoint: %q has no host", c.Endpoint)
		}
	}
	switch {
	case c.Bucket == "":
		return errors.New("objectstore config: bucket: must not be empty")
	case strings.Contains(c.Bucket, "/"):
		return fmt.Errorf("objectstore config: bucket: %q holds a '/'; put key paths in prefix", c.Bucket)
	case !utf8.ValidString(c.Prefix):
		return fmt.Errorf("objectstore config: prefix: %q is not valid UTF-8, as S3 keys are", c.Prefix)
	case c.TuplesPerObject < 0:
		return fmt.Errorf("objectstore config: tuplesPerObject: must not be negative, got %d", c.TuplesPerObject)
	case c.BytesPerTuple < 0:
		return fmt.Errorf("objectstore config: bytesPerTuple: must not be negative, got %d", c.BytesPerTuple)
	case (c.TuplesPerObject > 0) == (c.BytesPerTuple > 0):
		return fmt.Errorf("objectstore config: tuplesPerObject or bytesPerTuple: exactly one must be set, got %d and %d",
			c.TuplesPerObject, c.BytesPerTuple)
	case c.Settle < 0:
		return fmt.Errorf("objectstore config: settle: must not be negative, got %s", c.Settle)
	}
	if c.KeyTimeLayout != "" {
		if _, err := newKeyTime(c.KeyTimeLayout); err != nil {
			return fmt.Errorf("objectstore config: keyTimeLayout: %w", err)
		}
	}
	if c.Credentials != nil {
		switch {
		case c.Credentials.AccessKeyID == "":
			return errors.New("objectstore config: credentials.accessKeyID: must not be empty")
		case c.Credentials.SecretAccessKey == "":
			return errors.New("objectstore config: credentials.secretAccessKey: must not be empty")
		}
	}
	return nil
}

// The keys CredentialsFromSecret reads.
const (
	keyAccessKeyID     = "accessKeyID"
	keySecretAccessKey = "secretAccessKey"
	keySessionToken    = "sessionToken"
)

// CredentialsFromSecret returns the credentials held in a Kubernetes
// Secret's data (taken as a plain map, so that this package imports no
// Kubernetes package): accessKeyID and secretAccessKey, both required, and
// sessionToken for temporary credentials. Other keys are ignored. A value
// that is empty or holds whitespace is an error that names its key, since
// no AWS credential holds either and a trailing newline left by `echo` would
// otherwise show only as a signature mismatch at the first listing.
func CredentialsFromSecret(data map[string][]byte) (*Credentials, error) {
	value := func(key string, required bool) (string, error) {
		v, ok := data[key]
		switch {
		case !ok && required:
			return "", fmt.Errorf("secret key %q is missing", key)
		case !ok:
			return "", nil
		case len(v) == 0:
			return "", fmt.Errorf("secret key %q is empty", key)
		case strings.ContainsFunc(string(v), unicode.IsSpace):
			return "", fmt.Errorf("secret key %q holds whitespace (a trailing newline?)", key)
		}
		return string(v), nil
	}
	accessKeyID, err := value(keyAccessKeyID, true)
	if err != nil {
		return nil, err
	}
	secretAccessKey, err := value(keySecretAccessKey, true)
	if err != nil {
		return nil, err
	}
	sessionToken, err := value(keySessionToken, false)
	if err != nil {
		return nil, err
	}
	return &Credentials{AccessKeyID: accessKeyID, SecretAccessKey: secretAccessKey, SessionToken: sessionToken}, nil
}
