package replication

import (
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/partition"
)

// named lists the partitions a request names, as "t-p@offset", and those
// it forgets, as "-t-p".
func named(req *kmsg.FetchRequest) []string {
	var out []string
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			out = append(out, fmt.Sprintf("%s-%d@%d", t.Topic, p.Partition, p.FetchOffset))
		}
	}
	for _, t := range req.ForgottenTopics {
		for _, p := range t.Partitions {
			out = append(out, fmt.Sprintf("-%s-%d", t.Topic, p))
		}
	}
	slices.Sort(out)
	return out
}

// A follower's fetch session, as Kafka's FetchSessionHandler keeps it:
// the first fetch is full and opens the session; later ones name only the
// partitions whose position changed and forget those that left; a refused
// session makes the next fetch full again.
func TestFollowerSessionNamesOnlyChanges(t *testing.T) {
	tp := func(p int32) partition.TopicPartition { return partition.TopicPartition{Topic: "t", Partition: p} }
	at := func(off int64) sessionPart {
		return sessionPart{topicID: [16]byte{1}, leaderEpoch: 3, offset: off, lastEpoch: 3}
	}
	var fs followerSession
	fetch := func(next map[partition.TopicPartition]sessionPart, resp *kmsg.FetchResponse) (*kmsg.FetchRequest, bool) {
		req := kmsg.NewPtrFetchRequest()
		fs.build(req, next, 1<<20)
		return req, fs.answered(resp, next)
	}
	ok := func(id int32) *kmsg.FetchResponse { r := kmsg.NewPtrFetchResponse(); r.SessionID = id; return r }

	next := map[partition.TopicPartition]sessionPart{tp(0): at(5), tp(1): at(7)}
	req, _ := fetch(next, ok(42))
	if req.SessionID != 0 || req.SessionEpoch != 0 || fmt.Sprint(named(req)) != "[t-0@5 t-1@7]" {
		t.Fatalf("first fetch: session %d epoch %d names %v, want a full fetch opening a session", req.SessionID, req.SessionEpoch, named(req))
	}
	req, _ = fetch(next, ok(42))
	if req.SessionID != 42 || req.SessionEpoch != 1 || len(named(req)) != 0 {
		t.Fatalf("idle fetch: session %d epoch %d names %v, want nothing in session 42 epoch 1", req.SessionID, req.SessionEpoch, named(req))
	}
	next = map[partition.TopicPartition]sessionPart{tp(0): at(9), tp(2): at(0)}
	req, _ = fetch(next, ok(42))
	if req.SessionEpoch != 2 || fmt.Sprint(named(req)) != "[-t-1 t-0@9 t-2@0]" {
		t.Fatalf("epoch %d names %v, want 0 moved, 2 added and 1 forgotten at epoch 2", req.SessionEpoch, named(req))
	}
	refused := kmsg.NewPtrFetchResponse()
	refused.ErrorCode = kerr.FetchSessionIDNotFound.Code
	if _, accepted := fetch(next, refused); accepted {
		t.Fatal("FETCH_SESSION_ID_NOT_FOUND accepted")
	}
	req, _ = fetch(next, ok(43))
	if req.SessionID != 0 || req.SessionEpoch != 0 || fmt.Sprint(named(req)) != "[t-0@9 t-2@0]" {
		t.Fatalf("after a refusal: session %d epoch %d names %v, want a full fetch", req.SessionID, req.SessionEpoch, named(req))
	}
	epochRefused := kmsg.NewPtrFetchResponse()
	epochRefused.ErrorCode = kerr.InvalidFetchSessionEpoch.Code
	fetch(next, epochRefused)
	req, _ = fetch(next, ok(44))
	if req.SessionID != 43 || req.SessionEpoch != 0 || len(named(req)) != 2 {
		t.Fatalf("after INVALID_FETCH_SESSION_EPOCH: session %d epoch %d names %v, want a full fetch closing session 43", req.SessionID, req.SessionEpoch, named(req))
	}
}
