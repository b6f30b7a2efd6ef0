package emr_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/emr"
	"github.com/laxity-dev/laxity/internal/emr/emrfake"
	"github.com/laxity-dev/laxity/internal/pool"
)

// newClient is a Client of the fake with its credentials and fast retries;
// change adjusts its Config.
func newClient(t *testing.T, f *emrfake.Server, change ...func(*emr.Config)) *emr.Client {
	t.Helper()
	cfg := f.Config()
	for _, c := range change {
		c(&cfg)
	}
	c, err := emr.New(context.Background(), cfg,
		emr.WithCredentials(f.Credentials()),
		emr.WithRetries(4, time.Millisecond))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

var _ pool.Backend = (*emr.Client)(nil)

func TestConfigFrom(t *testing.T) {
	got := emr.ConfigFrom(&laxityv1alpha1.EMRContainersBackend{
		VirtualClusterID: emrfake.VirtualClusterID,
		ExecutionRoleARN: emrfake.ExecutionRoleARN,
		ReleaseLabel:     emrfake.ReleaseLabel,
		Region:           emrfake.Region,
		NodegroupName:    emrfake.NodegroupName,
		ClusterName:      emrfake.ClusterName,
		Endpoint:         "http://127.0.0.1:4566",
	})
	want := emr.Config{
		Region:           emrfake.Region,
		Endpoint:         "http://127.0.0.1:4566",
		VirtualClusterID: emrfake.VirtualClusterID,
		ExecutionRoleARN: emrfake.ExecutionRoleARN,
		ReleaseLabel:     emrfake.ReleaseLabel,
		ClusterName:      emrfake.ClusterName,
		NodegroupName:    emrfake.NodegroupName,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ConfigFrom (-want +got):\n%s", diff)
	}
}

func TestNewRejectsConfig(t *testing.T) {
	valid := emr.Config{
		Region:           emrfake.Region,
		VirtualClusterID: emrfake.VirtualClusterID,
		ExecutionRoleARN: emrfake.ExecutionRoleARN,
		ReleaseLabel:     emrfake.ReleaseLabel,
		ClusterName:      emrfake.ClusterName,
		NodegroupName:    emrfake.NodegroupName,
	}
	tests := []struct {
		name    string
		change  func(*emr.Config)
		wantErr string
	}{
		{"no region", func(c *emr.Config) { c.Region = "" }, "emr config: region: must not be empty"},
		{"no virtual cluster", func(c *emr.Config) { c.VirtualClusterID = "" }, "emr config: virtualClusterId: must not be empty"},
		{"no role", func(c *emr.Config) { c.ExecutionRoleARN = "" }, "emr config: executionRoleArn: must not be empty"},
		{"no release", func(c *emr.Config) { c.ReleaseLabel = "" }, "emr config: releaseLabel: must not be empty"},
		{"no cluster", func(c *emr.Config) { c.ClusterName = "" }, "emr config: clusterName: must not be empty"},
		{"no node group", func(c *emr.Config) { c.NodegroupName = "" }, "emr config: nodegroupName: must not be empty"},
		{"endpoint without scheme", func(c *emr.Config) { c.Endpoint = "localhost:4566" },
			`emr config: endpoint: "localhost:4566" is not an http or https URL with a host`},
		{"endpoint unparsable", func(c *emr.Config) { c.Endpoint = "http://[::1" }, "emr config: endpoint: parse"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := valid
			tc.change(&cfg)
			_, err := emr.New(context.Background(), cfg)
			if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
				t.Fatalf("New: %v, want an error starting with %q", err, tc.wantErr)
			}
			if !emr.IsInvalid(err) {
				t.Errorf("IsInvalid(%v) = false, want true", err)
			}
		})
	}
}

func TestNewRejectsRetries(t *testing.T) {
	f := emrfake.New(t)
	cfg := f.Config()
	for _, opt := range []emr.Option{emr.WithRetries(0, time.Second), emr.WithRetries(3, -time.Second)} {
		if _, err := emr.New(context.Background(), cfg, opt); err == nil {
			t.Error("New accepted retries without an attempt or with a negative backoff")
		}
	}
}

// TestUnreachableEndpointIsRetryable points a client at a port nothing
// listens on: the SDK gives up after its attempts, and the error is still
// one to retry later.
func TestUnreachableEndpointIsRetryable(t *testing.T) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := listener.Addr().String()
	if err := listener.Close(); err != nil {
		t.Fatal(err)
	}
	f := emrfake.New(t)
	c := newClient(t, f, func(c *emr.Config) { c.Endpoint = "http://" + addr })
	_, err = c.Requested(context.Background())
	if err == nil {
		t.Fatal("Requested of an unreachable endpoint succeeded")
	}
	if !emr.IsRetryable(err) || emr.IsInvalid(err) {
		t.Errorf("IsRetryable, IsInvalid = %t, %t for %v; want true, false", emr.IsRetryable(err), emr.IsInvalid(err), err)
	}
	if !strings.HasPrefix(err.Error(), "reading EKS node group spark-workers: eks DescribeNodegroup: ") {
		t.Errorf("error %q does not name the node group and the call", err)
	}
}
