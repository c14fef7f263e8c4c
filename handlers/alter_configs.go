package handlers

// AlterConfigs (key 33), v0-v2.
//
// The legacy form: the configs given replace all of a resource's dynamic
// overrides (what is not named is reset). Topic configs are validated like
// CreateTopics' (INVALID_CONFIG); broker resources accept the dynamically
// updatable broker configs only (INVALID_REQUEST otherwise). ValidateOnly
// checks without changing anything.
//
// Authorization (authz.go), as Kafka's: ALTER_CONFIGS on the topic
// (TOPIC_AUTHORIZATION_FAILED), the group (GROUP_AUTHORIZATION_FAILED), or
// the cluster for brokers and broker loggers
// (CLUSTER_AUTHORIZATION_FAILED).

import (
	"context"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/protocol"
)

func (h *Handlers) registerAlterConfigs(reg *protocol.Registry) {
	reg.Register(33, 0, 2, h.alterConfigs)
}

func (h *Handlers) alterConfigs(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.AlterConfigsRequest)
	resp := r.ResponseKind().(*kmsg.AlterConfigsResponse)
	changed := false
	for _, res := range r.Resources {
		rr := kmsg.NewAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		configs := make(map[string]string, len(res.Configs))
		err := h.authorizeConfigResource(req, acl.OpAlterConfigs, int8(res.ResourceType), res.ResourceName)
		for _, c := range res.Configs {
			if err != nil {
				break
			}
			if c.Value == nil {
				err = fmt.Errorf("%w: null value for %s", cluster.ErrInvalidRequest, c.Name)
				break
			}
			if err = checkClientConfig(c.Name, c.Value); err != nil {
				break
			}
			configs[c.Name] = *c.Value
		}
		if err == nil {
			err = h.setConfigs(ctx, res.ResourceType, res.ResourceName, configs, r.ValidateOnly)
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

// setConfigs replaces the dynamic configs of a topic or broker resource.
func (h *Handlers) setConfigs(ctx context.Context, typ kmsg.ConfigResourceType, name string, configs map[string]string, validateOnly bool) error {
	switch typ {
	case resourceTopic:
		return h.meta.SetTopicConfigs(ctx, name, configs, validateOnly)
	case resourceBroker:
		if name != "" && name != strconv.Itoa(int(h.cfg.NodeID)) {
			if _, ok := h.meta.Image().Brokers[atoi32(name)]; !ok {
				return fmt.Errorf("%w: unknown broker %s", cluster.ErrInvalidRequest, name)
			}
		}
		return h.meta.SetBrokerConfigs(ctx, name, configs, validateOnly)
	case resourceGroup:
		return h.setGroupConfigs(ctx, name, configs, validateOnly)
	default:
		return fmt.Errorf("%w: unsupported resource type %d", cluster.ErrInvalidRequest, typ)
	}
}

// currentConfigs returns a resource's dynamic overrides.
func (h *Handlers) currentConfigs(typ kmsg.ConfigResourceType, name string) (map[string]string, error) {
	im := h.meta.Image()
	switch typ {
	case resourceTopic:
		t := im.Topics[name]
		if t == nil {
			return nil, fmt.Errorf("%w: topic %s", cluster.ErrUnknownTopic, name)
		}
		return t.Configs, nil
	case resourceBroker:
		return im.BrokerConfigs[name], nil
	case resourceGroup:
		return im.GroupConfigs[name], nil
	default:
		return nil, fmt.Errorf("%w: unsupported resource type %d", cluster.ErrInvalidRequest, typ)
	}
}

func atoi32(s string) int32 {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return -1
	}
	return int32(n)
}
