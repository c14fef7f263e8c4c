package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gokafka/gokafka/partition"
)

// Clean shutdown proof (KIP-966's PreviousBrokerEpoch). A broker whose
// logs all closed cleanly records its broker epoch in the metadata
// directory; the next run reads and removes the record before anything
// else, and registers with that epoch as its previous one. The controller
// treats a registration whose previous epoch is not the registered one as
// an unclean shutdown: the broker may have lost unflushed records, so it
// leaves every ELR. Without the record (a crash, kill -9, a failed flush)
// every restart is unclean.

// cleanShutdownFile holds the broker epoch of a run whose logs closed
// cleanly.
const cleanShutdownFile = "clean-shutdown-broker-epoch"

// RecordCleanShutdown records this broker's epoch as having shut down
// cleanly. Call it only once every log is flushed and closed.
func (c *Controller) RecordCleanShutdown() error {
	b, ok := c.Image().Brokers[c.cfg.NodeID]
	if !ok || c.incarnation == "" || b.Incarnation != c.incarnation || b.Epoch <= 0 {
		return nil // never registered in this run: nothing to vouch for
	}
	path := filepath.Join(c.qc.Dir, cleanShutdownFile)
	if err := partition.WriteFileAtomic(partition.OSFS(), path, []byte(strconv.FormatInt(b.Epoch, 10)+"\n")); err != nil {
		return fmt.Errorf("record clean shutdown: %w", err)
	}
	return nil
}

// takeCleanShutdown reads and removes the record of dir, returning the
// previous run's broker epoch, or -1 if it did not shut down cleanly (or
// the record cannot be removed, which would make a later crash look
// clean).
func takeCleanShutdown(dir string) (int64, error) {
	path := filepath.Join(dir, cleanShutdownFile)
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return -1, nil
	}
	if err != nil {
		return -1, err
	}
	if err := os.Remove(path); err != nil {
		return -1, err
	}
	if err := partition.OSFS().SyncDir(dir); err != nil {
		return -1, err
	}
	epoch, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || epoch <= 0 {
		return -1, fmt.Errorf("unreadable %s %q", cleanShutdownFile, b)
	}
	return epoch, nil
}
