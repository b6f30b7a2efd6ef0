// Package emr is the AWS side of the emrContainers node pool backend
// (docs/design.md, "Backends"): it starts, finds, describes and cancels
// the job runs of an EMR on EKS virtual cluster, and resizes the EKS managed
// node group the job runs are scheduled on.
//
// A Client is built from a Config with New. Credentials come from the AWS
// SDK's default chain (IRSA inside a cluster), so nothing secret is part of a
// Config. Calls that AWS throttles, or that fail with a 5xx, are retried by
// the SDK's standard retryer a bounded number of times; errors that are
// still worth retrying later are reported by IsRetryable, and requests AWS
// or this package reject as written by IsInvalid.
package emr

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/emrcontainers"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
)

// Config says which virtual cluster runs the steps and which node group
// backs it.
type Config struct {
	// Region is the AWS region of the virtual cluster and the node group.
	Region string
	// Endpoint, when set, replaces the regional endpoints of both EMR on
	// EKS and EKS, for example with a local fake.
	Endpoint string
	// VirtualClusterID is the EMR on EKS virtual cluster the job runs start
	// on.
	VirtualClusterID string
	// ExecutionRoleARN is the IAM role the job runs assume.
	ExecutionRoleARN string
	// ReleaseLabel is the EMR release of the job runs, e.g. "emr-7.5.0-latest".
	ReleaseLabel string
	// ClusterName is the EKS cluster that owns the node group.
	ClusterName string
	// NodegroupName is the EKS managed node group resized to the planned
	// node count.
	NodegroupName string
}

// ConfigFrom is the Config an ElasticSchedule's
// spec.nodePool.backend.emrContainers describes.
func ConfigFrom(b *laxityv1alpha1.EMRContainersBackend) Config {
	return Config{
		Region:           b.Region,
		Endpoint:         b.Endpoint,
		VirtualClusterID: b.VirtualClusterID,
		ExecutionRoleARN: b.ExecutionRoleARN,
		ReleaseLabel:     b.ReleaseLabel,
		ClusterName:      b.ClusterName,
		NodegroupName:    b.NodegroupName,
	}
}

// Validate reports the first field of c that cannot work. Fields are named
// as in spec.nodePool.backend.emrContainers.
func (c Config) Validate() error {
	required := []struct{ field, value string }{
		{"region", c.Region},
		{"virtualClusterId", c.VirtualClusterID},
		{"executionRoleArn", c.ExecutionRoleARN},
		{"releaseLabel", c.ReleaseLabel},
		{"clusterName", c.ClusterName},
		{"nodegroupName", c.NodegroupName},
	}
	for _, r := range required {
		if r.value == "" {
			return rejectf("emr config: %s: must not be empty", r.field)
		}
	}
	if c.Endpoint == "" {
		return nil
	}
	u, err := url.Parse(c.Endpoint)
	switch {
	case err != nil:
		return rejectf("emr config: endpoint: %v", err)
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		return rejectf("emr config: endpoint: %q is not an http or https URL with a host", c.Endpoint)
	}
	return nil
}

// Retry bounds of a Client unless WithRetries says otherwise. They keep one
// call's backoff under 15 s in all, so that a reconcile holding a worker
// gives up soon and is requeued rather than blocking through a long
// throttling episode.
const (
	DefaultMaxAttempts = 4
	DefaultMaxBackoff  = 5 * time.Second
)

// Option changes how New builds a Client.
type Option func(*options)

type options struct {
	credentials aws.CredentialsProvider
	maxAttempts int
	maxBackoff  time.Duration
}

// WithCredentials replaces the SDK's default credential chain, for example
// with static credentials for a test server.
func WithCredentials(p aws.CredentialsProvider) Option {
	return func(o *options) { o.credentials = p }
}

// WithRetries bounds the SDK's retries of throttled, 5xx and broken
// calls: maxAttempts counts the first attempt, and maxBackoff caps the delay
// before each retry.
func WithRetries(maxAttempts int, maxBackoff time.Duration) Option {
	return func(o *options) { o.maxAttempts, o.maxBackoff = maxAttempts, maxBackoff }
}

// Client talks to EMR on EKS and EKS for one virtual cluster and one node
// group. It is safe for concurrent use.
type Client struct {
	cfg Config
	emr *emrcontainers.Client
	eks *eks.Client
}

// New builds a Client for cfg. It validates cfg and loads the AWS
// configuration (credentials are resolved on the first call, not here); it
// sends no request.
func New(ctx context.Context, cfg Config, opts ...Option) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := options{maxAttempts: DefaultMaxAttempts, maxBackoff: DefaultMaxBackoff}
	for _, opt := range opts {
		opt(&o)
	}
	switch {
	case o.maxAttempts < 1:
		return nil, fmt.Errorf("emr client: %d maximum attempts: at least one is needed", o.maxAttempts)
	case o.maxBackoff < 0:
		return nil, fmt.Errorf("emr client: maximum backoff %v must not be negative", o.maxBackoff)
	}

	loadOpts := []func(*config.LoadOptions) error{
		config.WithRegion(cfg.Region),
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(s *retry.StandardOptions) {
				s.MaxAttempts = o.maxAttempts
				s.MaxBackoff = o.maxBackoff
			})
		}),
	}
	if o.credentials != nil {
		loadOpts = append(loadOpts, config.WithCredentialsProvider(o.credentials))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("loading the AWS configuration: %w", err)
	}
	// Set per service, so that cfg.Endpoint also wins over a service's
	// AWS_ENDPOINT_URL_* variable. Without it the SDK resolves endpoints as
	// usual: the regional ones, or what the environment and shared config say.
	return &Client{
		cfg: cfg,
		emr: emrcontainers.NewFromConfig(awsCfg, func(o *emrcontainers.Options) {
			if cfg.Endpoint != "" {
				o.BaseEndpoint = aws.String(cfg.Endpoint)
			}
		}),
		eks: eks.NewFromConfig(awsCfg, func(o *eks.Options) {
			if cfg.Endpoint != "" {
				o.BaseEndpoint = aws.String(cfg.Endpoint)
			}
		}),
	}, nil
}
