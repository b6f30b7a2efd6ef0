package emr

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/eks/types"
)

// Requested is the node group's desired size: the node count currently asked
// of the pool.
func (c *Client) Requested(ctx context.Context) (int32, error) {
	scaling, err := c.scalingConfig(ctx)
	if err != nil {
		return 0, err
	}
	return aws.ToInt32(scaling.DesiredSize), nil
}

// Request sets the node group's desired size to n, leaving its minimum and
// maximum as they are. It is idempotent: at desired size n already it
// writes nothing. A count outside the node group's [minSize, maxSize] is
// rejected (IsInvalid) rather than sent, since EKS would refuse it too and
// the fix is in the node group or the pool's sizes. While an earlier update
// of the node group is still in progress EKS refuses another one with
// ResourceInUseException, which IsRetryable reports.
func (c *Client) Request(ctx context.Context, n int32) error {
	if n < 0 {
		return rejectf("requesting %d nodes: the count must not be negative", n)
	}
	scaling, err := c.scalingConfig(ctx)
	if err != nil {
		return err
	}
	if aws.ToInt32(scaling.DesiredSize) == n {
		return nil
	}
	lo, hi := aws.ToInt32(scaling.MinSize), aws.ToInt32(scaling.MaxSize)
	if n < lo || n > hi {
		return rejectf("EKS node group %s: %d nodes is outside its scaling bounds [%d, %d]", c.cfg.NodegroupName, n, lo, hi)
	}
	_, err = c.eks.UpdateNodegroupConfig(ctx, &eks.UpdateNodegroupConfigInput{
		ClusterName:   aws.String(c.cfg.ClusterName),
		NodegroupName: aws.String(c.cfg.NodegroupName),
		ScalingConfig: &types.NodegroupScalingConfig{
			MinSize:     scaling.MinSize,
			MaxSize:     scaling.MaxSize,
			DesiredSize: aws.Int32(n),
		},
	})
	if err != nil {
		return fmt.Errorf("resizing EKS node group %s to %d nodes: %w", c.cfg.NodegroupName, n, wrapCall(serviceEKS, "UpdateNodegroupConfig", err))
	}
	return nil
}

// scalingConfig is the node group's current minimum, maximum and desired
// size.
func (c *Client) scalingConfig(ctx context.Context) (*types.NodegroupScalingConfig, error) {
	out, err := c.eks.DescribeNodegroup(ctx, &eks.DescribeNodegroupInput{
		ClusterName:   aws.String(c.cfg.ClusterName),
		NodegroupName: aws.String(c.cfg.NodegroupName),
	})
	if err != nil {
		return nil, fmt.Errorf("reading EKS node group %s: %w", c.cfg.NodegroupName, wrapCall(serviceEKS, "DescribeNodegroup", err))
	}
	if out.Nodegroup == nil || out.Nodegroup.ScalingConfig == nil {
		return nil, fmt.Errorf("reading EKS node group %s: EKS returned no scaling configuration", c.cfg.NodegroupName)
	}
	return out.Nodegroup.ScalingConfig, nil
}
