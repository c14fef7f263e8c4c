package handlers

// InitProducerId (key 22), v0-v5.
//
// An idempotent producer (no transactional id) always gets a new producer
// id with epoch 0, drawn from a block the metadata quorum allocated to this
// broker, so ids are unique across brokers and restarts. A request that
// names its previous id and epoch (v3+, KIP-360) still gets a fresh id, as
// Kafka does without a transactional id. Transactional ids belong to the
// transaction coordinator, which gokafka does not run yet: they are
// answered COORDINATOR_NOT_AVAILABLE.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/protocol"
)

func (h *Handlers) registerInitProducerID(reg *protocol.Registry) {
	if h.pids == nil {
		return
	}
	reg.Register(22, 0, 5, h.initProducerID)
}

func (h *Handlers) initProducerID(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.InitProducerIDRequest)
	resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if r.TransactionalID != nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	id, err := h.pids.Next(ctx)
	if err != nil {
		h.logger.Warn().Err(err).Msg("allocating a producer id failed")
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp, nil
}
