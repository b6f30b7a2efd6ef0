package objectstore

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

const (
	testBucket = "events"
	testPrefix = "clicks/"
	testRegion = "eu-west-1"
	// testLayout writes the key times of the tests' key-time mode.
	testLayout = "2006/01/02/15-04-05"
)

var (
	windowStart = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	windowEnd   = windowStart.Add(time.Hour)
	testCreds   = Credentials{AccessKeyID: "AKIDLAXITYTEST", SecretAccessKey: "laxity/test+secret"}
)

// store is an in-process S3 server, gofakes3 with its in-memory backend, on
// a loopback HTTP port. It dates objects by a clock the test sets, and
// accepts only requests signed with testCreds.
type store struct {
	url    string
	clock  *storeClock
	client *s3.Client
}

func newStore(t *testing.T) *store {
	t.Helper()
	clock := &storeClock{now: windowStart}
	// The SDK dates its signatures by the wall clock, the backend its
	// objects by the test's: the skew check would reject every request.
	faker := gofakes3.New(s3mem.New(s3mem.WithTimeSource(clock)), gofakes3.WithTimeSkewLimit(0))
	server := httptest.NewServer(checkSignature(t, faker.Server(), testCreds))
	t.Cleanup(server.Close)
	st := &store{url: server.URL, clock: clock}
	st.client = s3.New(s3.Options{
		BaseEndpoint: aws.String(server.URL),
		Region:       testRegion,
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(testCreds.AccessKeyID, testCreds.SecretAccessKey, ""),
	})
	if _, err := st.client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(testBucket)}); err != nil {
		t.Fatalf("creating the bucket: %v", err)
	}
	return st
}

// config is the Config of a source that reads the store's test prefix with
// the test credentials, one tuple per object, positions by LastModified.
func (st *store) config() Config {
	creds := testCreds
	return Config{
		Endpoint:        st.url,
		Region:          testRegion,
		Bucket:          testBucket,
		Prefix:          testPrefix,
		PathStyle:       true,
		Credentials:     &creds,
		TuplesPerObject: 1,
	}
}

// put uploads an object of size bytes under key, dated at.
func (st *store) put(t *testing.T, key string, size int, at time.Time) {
	t.Helper()
	st.clock.set(at)
	_, err := st.client.PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: aws.String(testBucket),
		Key:    aws.String(key),
		Body:   bytes.NewReader(make([]byte, size)),
	})
	if err != nil {
		t.Fatalf("uploading %q: %v", key, err)
	}
}

// newSource is New for the test window.
func newSource(t *testing.T, cfg Config) *Source {
	t.Helper()
	src, err := New(cfg, windowStart, windowEnd)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return src
}

// storeClock is the time the store dates new objects by. The HTTP server
// reads it on its own goroutines, hence the lock.
type storeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *storeClock) set(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = now
}

func (c *storeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *storeClock) Since(t time.Time) time.Duration {
	return c.Now().Sub(t)
}

// checkSignature serves only requests signed with creds, by signing each
// again with the headers, date and payload hash it names and comparing:
// gofakes3 itself checks no signature.
func checkSignature(t *testing.T, next http.Handler, creds Credentials) http.Handler {
	signer := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fail := func(code, message string) {
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>` + code +
				`</Code><Message>` + message + `</Message></Error>`))
		}
		authorization := r.Header.Get("Authorization")
		fields := map[string]string{}
		for _, field := range strings.Split(strings.TrimPrefix(authorization, "AWS4-HMAC-SHA256 "), ", ") {
			name, value, _ := strings.Cut(field, "=")
			fields[name] = value
		}
		// Credential is <access key>/<date>/<region>/<service>/aws4_request.
		scope := strings.Split(fields["Credential"], "/")
		if len(scope) != 5 || scope[0] != creds.AccessKeyID {
			fail("InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records.")
			return
		}
		signedAt, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
		if err != nil {
			fail("AccessDenied", "X-Amz-Date: "+err.Error())
			return
		}
		again, err := http.NewRequestWithContext(r.Context(), r.Method, "http://"+r.Host+r.URL.RequestURI(), http.NoBody)
		if err != nil {
			t.Errorf("rebuilding %s %s: %v", r.Method, r.URL, err)
			fail("AccessDenied", err.Error())
			return
		}
		again.ContentLength = r.ContentLength
		for _, name := range strings.Split(fields["SignedHeaders"], ";") {
			if name != "host" && name != "content-length" {
				again.Header[http.CanonicalHeaderKey(name)] = r.Header.Values(name)
			}
		}
		err = signer.SignHTTP(r.Context(), aws.Credentials{AccessKeyID: creds.AccessKeyID, SecretAccessKey: creds.SecretAccessKey},
			again, r.Header.Get("X-Amz-Content-Sha256"), scope[3], scope[2], signedAt)
		if err != nil {
			t.Errorf("signing %s %s again: %v", r.Method, r.URL, err)
		}
		if err != nil || again.Header.Get("Authorization") != authorization {
			fail("SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided.")
			return
		}
		next.ServeHTTP(w, r)
	})
}
