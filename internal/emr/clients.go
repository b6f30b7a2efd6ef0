package emr

import (
	"context"
	"sync"
)

// Clients keeps one Client per Config, so that the schedules of one virtual
// cluster and node group share a client and its connections, and a changed
// backend gets a new one. The zero value is ready to use.
type Clients struct {
	// Options are given to every Client opened.
	Options []Option

	mu       sync.Mutex
	byConfig map[Config]*Client
}

// For is the Client of cfg, opened on first use.
func (c *Clients) For(ctx context.Context, cfg Config) (*Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if client, ok := c.byConfig[cfg]; ok {
		return client, nil
	}
	client, err := New(ctx, cfg, c.Options...)
	if err != nil {
		return nil, err
	}
	if c.byConfig == nil {
		c.byConfig = map[Config]*Client{}
	}
	c.byConfig[cfg] = client
	return client, nil
}
