package replication_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/gokafka/gokafka/internal/testkit"
	"github.com/gokafka/gokafka/replication"
)

func TestFollowerLagsShowAStoppedFollowerBehindAndCaughtUpOnesAtZero(t *testing.T) {
	c := newSimCluster(t, testReplConfig(10*time.Second), 1, 2, 3)
	c.createTopic("t", []int32{1, 2, 3}, nil)
	l := c.leader("t")
	l.mustProduce("t", "a", -1)
	lagOf := func(id int32) (replication.FollowerLag, bool) {
		for _, f := range l.rm.FollowerLags() {
			if f.TP.Topic == "t" && f.Follower == id {
				return f, true
			}
		}
		return replication.FollowerLag{}, false
	}
	var stopped int32
	for _, id := range []int32{1, 2, 3} {
		if id != l.id {
			stopped = id
		}
	}
	c.nodes[stopped].stop()
	for _, v := range []string{"b", "c", "d"} {
		l.mustProduce("t", v, 1)
	}
	testkit.Eventually(t, 10*time.Second, func() error {
		for _, id := range []int32{1, 2, 3} {
			if id == l.id {
				continue
			}
			f, ok := lagOf(id)
			switch {
			case !ok:
				return fmt.Errorf("no lag for follower %d", id)
			case id == stopped && f.Offsets != 3:
				return fmt.Errorf("stopped follower %d lags %d offsets, want 3", id, f.Offsets)
			case id != stopped && (f.Offsets != 0 || f.Time != 0):
				return fmt.Errorf("live follower %d lags %+v, want 0", id, f)
			}
		}
		return nil
	})
}
