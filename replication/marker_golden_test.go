package replication

import (
	"testing"

	"github.com/gokafka/gokafka/internal/testkit"
	"github.com/gokafka/gokafka/partition"
)

func TestControlBatchesAreByteForByteGolden(t *testing.T) {
	cases := map[string]struct {
		pid              int64
		epoch            int16
		coordinatorEpoch int32
		commit           bool
		ts               int64
	}{
		"commit":          {1000, 0, 0, true, 1700000000000},
		"abort":           {1000, 3, 7, false, 1700000000001},
		"commit_high":     {1<<40 + 9, 32766, 1<<30 + 1, true, 1700000000002},
		"abort_ts_zero":   {5, 1, -1, false, 0},
		"commit_negative": {5, -1, 2, true, -1},
	}
	got := map[string][]byte{}
	for name, c := range cases {
		got[name] = partition.ControlBatch(c.pid, c.epoch, c.coordinatorEpoch, c.commit, c.ts)
	}
	testkit.GoldenHex(t, "testdata/markers.golden", got)
}
