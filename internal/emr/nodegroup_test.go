package emr_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/google/go-cmp/cmp"

	"github.com/laxity-dev/laxity/internal/emr"
	"github.com/laxity-dev/laxity/internal/emr/emrfake"
)

// TestRequest resizes the node group: to its current size without a write,
// then to a new size with its bounds left as they are.
func TestRequest(t *testing.T) {
	ctx := context.Background()
	f := emrfake.New(t)
	c := newClient(t, f)

	if got, err := c.Requested(ctx); err != nil || got != 2 {
		t.Fatalf("Requested = %d, %v; want 2", got, err)
	}
	if err := c.Request(ctx, 2); err != nil {
		t.Fatalf("Request(2) at desired size 2: %v", err)
	}
	if n := f.CallCount(emrfake.OpUpdateNodegroupConfig); n != 0 {
		t.Fatalf("Request at the current size sent %d UpdateNodegroupConfig calls, want none", n)
	}

	if err := c.Request(ctx, 14); err != nil {
		t.Fatalf("Request(14): %v", err)
	}
	got := f.LastUpdate().ScalingConfig
	want := &emrfake.ScalingConfig{MinSize: aws.Int32(0), MaxSize: aws.Int32(20), DesiredSize: aws.Int32(14)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("UpdateNodegroupConfig scalingConfig (-want +got):\n%s", diff)
	}
	if got, err := c.Requested(ctx); err != nil || got != 14 {
		t.Errorf("Requested after Request(14) = %d, %v; want 14", got, err)
	}
}

func TestRequestOutsideBounds(t *testing.T) {
	ctx := context.Background()
	f := emrfake.New(t)
	f.SetMinSize(1)
	c := newClient(t, f)
	tests := []struct {
		n       int32
		wantErr string
	}{
		{30, "EKS node group spark-workers: 30 nodes is outside its scaling bounds [1, 20]"},
		{0, "EKS node group spark-workers: 0 nodes is outside its scaling bounds [1, 20]"},
		{-1, "requesting -1 nodes: the count must not be negative"},
	}
	for _, tc := range tests {
		err := c.Request(ctx, tc.n)
		if err == nil || err.Error() != tc.wantErr {
			t.Errorf("Request(%d) = %v, want %q", tc.n, err, tc.wantErr)
		}
		if !emr.IsInvalid(err) || emr.IsRetryable(err) {
			t.Errorf("Request(%d): IsInvalid, IsRetryable = %t, %t; want true, false", tc.n, emr.IsInvalid(err), emr.IsRetryable(err))
		}
	}
	if n := f.CallCount(emrfake.OpUpdateNodegroupConfig); n != 0 {
		t.Errorf("out-of-bounds requests sent %d UpdateNodegroupConfig calls, want none", n)
	}
	if got := f.DesiredSize(); got != 2 {
		t.Errorf("desired size = %d after rejected requests, want 2", got)
	}
}

// TestRequestWhileUpdating asks for another size while EKS is still
// applying the previous one: ResourceInUseException, retryable, and not
// retried by the SDK itself, since an update takes minutes.
func TestRequestWhileUpdating(t *testing.T) {
	ctx := context.Background()
	f := emrfake.New(t)
	c := newClient(t, f)
	if err := c.Request(ctx, 4); err != nil {
		t.Fatalf("Request(4): %v", err)
	}

	err := c.Request(ctx, 10)
	const wantErr = "resizing EKS node group spark-workers to 10 nodes: eks UpdateNodegroupConfig: ResourceInUseException: " +
		"Nodegroup spark-workers cannot be updated as it is currently not in Active State"
	if err == nil || err.Error() != wantErr {
		t.Fatalf("Request(10) during an update = %v, want %q", err, wantErr)
	}
	if !emr.IsRetryable(err) || emr.IsInvalid(err) {
		t.Errorf("IsRetryable, IsInvalid = %t, %t; want true, false", emr.IsRetryable(err), emr.IsInvalid(err))
	}
	if n := f.CallCount(emrfake.OpUpdateNodegroupConfig); n != 2 {
		t.Errorf("UpdateNodegroupConfig calls = %d, want 2 (the SDK must not retry ResourceInUseException)", n)
	}
	// The size being applied is already the desired one: nothing to write.
	if err := c.Request(ctx, 4); err != nil {
		t.Errorf("Request(4) during its own update: %v", err)
	}

	f.FinishUpdate()
	if err := c.Request(ctx, 10); err != nil {
		t.Fatalf("Request(10) after the update finished: %v", err)
	}
	if got := f.DesiredSize(); got != 10 {
		t.Errorf("desired size = %d, want 10", got)
	}
}

func TestNodegroupRetriedAfter5xx(t *testing.T) {
	ctx := context.Background()
	f := emrfake.New(t)
	c := newClient(t, f)
	f.Fail(emrfake.OpDescribeNodegroup, 2, http.StatusInternalServerError, "ServerException", "internal failure")
	f.Fail(emrfake.OpUpdateNodegroupConfig, 1, http.StatusTooManyRequests, "TooManyRequestsException", "Rate exceeded")
	if err := c.Request(ctx, 6); err != nil {
		t.Fatalf("Request(6) through 5xx and 429 responses: %v", err)
	}
	if got := f.DesiredSize(); got != 6 {
		t.Errorf("desired size = %d, want 6", got)
	}
	if n := f.CallCount(emrfake.OpDescribeNodegroup); n != 3 {
		t.Errorf("DescribeNodegroup calls = %d, want 3", n)
	}
	if n := f.CallCount(emrfake.OpUpdateNodegroupConfig); n != 2 {
		t.Errorf("UpdateNodegroupConfig calls = %d, want 2", n)
	}
}

func TestUnknownNodegroupIsInvalid(t *testing.T) {
	f := emrfake.New(t)
	c := newClient(t, f, func(c *emr.Config) { c.NodegroupName = "gone" })
	_, err := c.Requested(context.Background())
	const want = "reading EKS node group gone: eks DescribeNodegroup: ResourceNotFoundException: No node group found for name: gone."
	if err == nil || err.Error() != want {
		t.Fatalf("Requested = %v, want %q", err, want)
	}
	if !emr.IsInvalid(err) || emr.IsRetryable(err) {
		t.Errorf("IsInvalid, IsRetryable = %t, %t; want true, false", emr.IsInvalid(err), emr.IsRetryable(err))
	}
}
