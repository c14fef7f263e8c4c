package replication_test

import (
	"context"
	"testing"

	"github.com/gokafka/gokafka/internal/testkit"
)

// The console shows each replica's LEO as the leader knows it from the
// followers' fetches, beside the leader's own LEO and HW.
func TestReplicaViewsShowTheFollowersLEOsAsTheLeaderSeesThem(t *testing.T) {
	_, rm := newFakeStack(t, imageWith(1, 0, 1, 2))
	if _, err := rm.Produce(context.Background(), tp("t", 0), testkit.SimpleBatch(3, 1000, 100), 1, 0); err != nil {
		t.Fatal(err)
	}
	vs := rm.ReplicaViews()
	if len(vs) != 1 || !vs[0].Leader || vs[0].LEO != 3 || vs[0].HW != 0 {
		t.Fatalf("before any follower fetch: %+v", vs)
	}
	if len(vs[0].Followers) != 1 || vs[0].Followers[0].ID != 2 || vs[0].Followers[0].LEO != -1 {
		t.Fatalf("follower before its first fetch: %+v", vs[0].Followers)
	}
	if r := followerFetch(rm, 2, 0, 3); r.Err != nil {
		t.Fatal(r.Err)
	}
	vs = rm.ReplicaViews()
	f := vs[0].Followers[0]
	if f.LEO != 3 || f.SinceCaughtUp != 0 || vs[0].HW != 3 {
		t.Fatalf("after the follower fetched at 3: HW %d, follower %+v", vs[0].HW, f)
	}
	if len(vs[0].ISR) != 2 {
		t.Fatalf("ISR %v", vs[0].ISR)
	}
}
