package handlers

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/idempotent"
	"github.com/gokafka/gokafka/protocol"
)

// The handlers serve InitProducerId from the allocator the broker hands
// them (the one the transaction coordinator draws from too), and do not
// serve it, nor the controller RPCs, when given none.
func TestInitProducerIDUsesTheAllocatorItIsGiven(t *testing.T) {
	h := limitsStack(t, Config{NodeID: 1}, 1, 1)
	if h.reg.Supports(22, 4) || h.reg.Supports(62, 0) || h.reg.Supports(67, 0) {
		t.Fatal("InitProducerId or a controller RPC is served without an allocator or a controller")
	}
	blocks := 0
	pids := idempotent.NewAllocator(func(context.Context) (int64, int32, error) {
		blocks++
		return 5000, 10, nil
	})
	reg := protocol.NewRegistry()
	New(reg, Config{NodeID: 1}, Deps{Meta: h.meta, Replicas: h.replicas, ProducerIDs: pids})
	fn, ok := reg.Handler(22, 4)
	if !ok {
		t.Fatal("InitProducerId not served with an allocator")
	}
	for want := int64(5000); want < 5002; want++ {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.SetVersion(4)
		resp, err := fn(context.Background(), &protocol.Request{Key: 22, Version: 4, Body: req})
		if err != nil {
			t.Fatal(err)
		}
		if r := resp.(*kmsg.InitProducerIDResponse); r.ErrorCode != 0 || r.ProducerID != want {
			t.Fatalf("InitProducerId: code %d id %d, want id %d", r.ErrorCode, r.ProducerID, want)
		}
	}
	if id, err := pids.Next(context.Background()); err != nil || id != 5002 || blocks != 1 {
		t.Fatalf("the allocator's next id %d (%v) after two InitProducerIds, %d blocks; want 5002 from one block", id, err, blocks)
	}
}
