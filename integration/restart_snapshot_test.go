package integration

import (
	"os"
	"path/filepath"
	"testing"
)

// A node stopped cleanly leaves a snapshot of the metadata it applied, so
// that its next start restores it rather than replaying the metadata log
// (with thousands of partitions, megabytes of it); restarted, it catches
// up with what changed meanwhile and is back in every ISR.
func TestClusterCleanlyStoppedNodeLeavesAMetadataSnapshotAndRejoinsEveryISR(t *testing.T) {
	c := startCluster(t, nil)
	const partitions = 24
	c.createTopic(t, "snap", partitions, nil)
	n := c.node(3)
	n.Stop()
	snaps, err := os.ReadDir(filepath.Join(n.DataDir(), "__cluster_metadata-0", "snapshots"))
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) == 0 {
		t.Fatal("no metadata snapshot after a clean shutdown")
	}
	n.Restart()
	for p := range int32(partitions) {
		c.waitFullISR(t, "snap", p)
	}
	if live, err := c.liveBrokers(3); err != nil || len(live) != 3 {
		t.Fatalf("restarted node lists live brokers %v (%v)", live, err)
	}
}
