package handlers

// IncrementalAlterConfigs (key 44), v0-v1.
//
// Each config carries an operation on the resource's current overrides:
// SET (0), DELETE (1, back to the inherited value), APPEND (2) and
// SUBTRACT (3), the last two for list configs only (INVALID_CONFIG
// otherwise). A name given twice for one resource is INVALID_REQUEST. The
// result is validated as a whole and replaces the overrides.
//
// Authorization (authz.go), as Kafka's: ALTER_CONFIGS on the topic
// (TOPIC_AUTHORIZATION_FAILED), the group (GROUP_AUTHORIZATION_FAILED), or
// the cluster for brokers and broker loggers
// (CLUSTER_AUTHORIZATION_FAILED).

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gokafka/gokafka/internal/kconfig"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/protocol"
)

func (h *Handlers) registerIncrementalAlterConfigs(reg *protocol.Registry) {
	reg.Register(44, 0, 1, h.incrementalAlterConfigs)
}

func (h *Handlers) incrementalAlterConfigs(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.IncrementalAlterConfigsRequest)
	resp := r.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	changed := false
	for _, res := range r.Resources {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		err := h.authorizeConfigResource(req, acl.OpAlterConfigs, int8(res.ResourceType), res.ResourceName)
		if err == nil {
			err = h.incrementalAlter(ctx, res, r.ValidateOnly)
		}
		rr.ErrorCode = errorCode(err)
		rr.ErrorMessage = errorMessage(err)
		resp.Resources = append(resp.Resources, rr)
		changed = changed || err == nil && !r.ValidateOnly
	}
	if changed {
		h.awaitPropagation(ctx, req, defaultPropagationTimeout)
	}
	return resp, nil
}

func (h *Handlers) incrementalAlter(ctx context.Context, res kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) error {
	cur, err := h.currentConfigs(res.ResourceType, res.ResourceName)
	if err != nil {
		return err
	}
	next := maps.Clone(cur)
	if next == nil {
		next = map[string]string{}
	}
	seen := map[string]bool{}
	for _, c := range res.Configs {
		if seen[c.Name] {
			return fmt.Errorf("%w: error due to duplicate config keys: %s", cluster.ErrInvalidRequest, c.Name)
		}
		seen[c.Name] = true
		value := ""
		if c.Value != nil {
			value = *c.Value
		}
		switch c.Op {
		case 0: // SET
			if c.Value == nil {
				return fmt.Errorf("%w: null value not supported for %s", cluster.ErrInvalidRequest, c.Name)
			}
			if err := checkClientConfig(c.Name, c.Value); err != nil {
				return err
			}
			next[c.Name] = value
		case 1: // DELETE
			delete(next, c.Name)
		case 2, 3: // APPEND, SUBTRACT
			def := cluster.TopicConfigDef(c.Name)
			if res.ResourceType != resourceTopic || def == nil || def.Type != cluster.TypeList {
				return fmt.Errorf("%w: config %s is not a list; APPEND and SUBTRACT apply to lists only", cluster.ErrInvalidConfig, c.Name)
			}
			base, ok := next[c.Name]
			if !ok {
				base = def.Default
			}
			items := kconfig.List(base)
			for _, v := range kconfig.List(value) {
				i := slices.Index(items, v)
				if c.Op == 2 && i < 0 {
					items = append(items, v)
				} else if c.Op == 3 && i >= 0 {
					items = slices.Delete(items, i, i+1)
				}
			}
			next[c.Name] = strings.Join(items, ",")
		default:
			return fmt.Errorf("%w: unknown operation %d for %s", cluster.ErrInvalidRequest, c.Op, c.Name)
		}
	}
	return h.setConfigs(ctx, res.ResourceType, res.ResourceName, next, validateOnly)
}
