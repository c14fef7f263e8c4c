// Package fake holds in-memory stand-ins for the cluster metadata and a
// replica log, shared by the tests of the packages above partition
// (replication, group, share, txn). A test drives them directly: it
// publishes metadata images and appends batches itself.
package fake

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/gokafka/gokafka/cluster"
)

// ErrNotSupported answers the metadata changes a Meta does not make.
var ErrNotSupported = errors.New("not supported by fake.Meta")

// Meta is a cluster.Metadata whose images the test publishes itself, for
// changes the controller has no API for (other leaders, leader epochs).
// Topic and config changes fail with ErrNotSupported; AlterPartition asks
// Alter; share-state updates are recorded.
type Meta struct {
	// Metadata is nil: a method Meta does not define panics, so a test
	// notices when the code under test starts needing more of it.
	cluster.Metadata
	// Node is what NodeID returns.
	Node int32
	// Alter, if set, answers AlterPartition. Set it before the code under
	// test starts.
	Alter func(cluster.AlterPartitionRequest) (cluster.PartitionInfo, error)

	mu      sync.Mutex
	img     *cluster.Image
	watches []func(prev, next *cluster.Image)
	shares  []cluster.ShareChange
}

// NewMeta returns a Meta for broker node holding img.
func NewMeta(node int32, img *cluster.Image) *Meta {
	return &Meta{Node: node, img: img}
}

func (f *Meta) Image() *cluster.Image {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.img
}

func (f *Meta) Watch(fn func(prev, next *cluster.Image)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.watches = append(f.watches, fn)
}

// Publish makes next the current image and runs the watches, on the
// caller's goroutine, as the controller runs them on its applying one.
func (f *Meta) Publish(next *cluster.Image) {
	f.mu.Lock()
	prev := f.img
	f.img = next
	ws := slices.Clone(f.watches)
	f.mu.Unlock()
	for _, fn := range ws {
		fn(prev, next)
	}
}

// Edit changes the current image in place, without running the watches.
func (f *Meta) Edit(fn func(*cluster.Image)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f.img)
}

func (f *Meta) CreateTopics(context.Context, []cluster.TopicSpec, bool) []error {
	return []error{ErrNotSupported}
}

func (f *Meta) DeleteTopics(context.Context, []string) []error { return []error{ErrNotSupported} }

func (f *Meta) CreatePartitions(context.Context, string, int32, [][]int32, bool) error {
	return ErrNotSupported
}

func (f *Meta) SetTopicConfigs(context.Context, string, map[string]string, bool) error {
	return ErrNotSupported
}

func (f *Meta) SetBrokerConfigs(context.Context, string, map[string]string, bool) error {
	return ErrNotSupported
}

func (f *Meta) AlterPartition(_ context.Context, req cluster.AlterPartitionRequest) (cluster.PartitionInfo, error) {
	if f.Alter != nil {
		return f.Alter(req)
	}
	return cluster.PartitionInfo{}, ErrNotSupported
}

func (f *Meta) NodeID() int32                          { return f.Node }
func (f *Meta) BrokerDefaults() cluster.BrokerDefaults { return cluster.BrokerDefaults{} }

// PeerClientID is a fixed name per role: nothing checks peers in tests
// over a fake.
func (f *Meta) PeerClientID(role string) string { return "gokafka-test-" + role }

// UpdateShareState records ch (share.StateWriter).
func (f *Meta) UpdateShareState(_ context.Context, ch cluster.ShareChange) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.shares = append(f.shares, ch)
	return nil
}

// ShareChanges returns the share-state updates so far.
func (f *Meta) ShareChanges() []cluster.ShareChange {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.shares)
}
