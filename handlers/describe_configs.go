package handlers

// DescribeConfigs (key 32), v0-v4.
//
// Topic resources list every topic config with its effective value and
// source (topic override, dynamic broker, dynamic default, static broker,
// default); synonyms (v1+) list the lower-precedence values when asked.
// Broker resources list this broker's static configs with dynamic
// overrides applied; the name must be this broker's id or "" (the
// cluster-wide dynamic defaults), else INVALID_REQUEST. ConfigNames filters
// the listing; null means all. v3+ adds config types, and documentation is
// left null.
//
// Authorization (authz.go), as Kafka's: DESCRIBE_CONFIGS on the topic
// (TOPIC_AUTHORIZATION_FAILED), the group (GROUP_AUTHORIZATION_FAILED), or
// the cluster for brokers and broker loggers
// (CLUSTER_AUTHORIZATION_FAILED).

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/protocol"
)

const (
	resourceTopic        = 2
	resourceBroker       = 4
	resourceBrokerLogger = 8
	resourceGroup        = 32
)

func (h *Handlers) registerDescribeConfigs(reg *protocol.Registry) {
	reg.Register(32, 0, 4, h.describeConfigs)
}

func (h *Handlers) describeConfigs(_ context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.DescribeConfigsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeConfigsResponse)
	im := h.meta.Image()
	for _, res := range r.Resources {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		var values []cluster.ConfigValue
		err := h.authorizeConfigResource(req, acl.OpDescribeConfigs, int8(res.ResourceType), res.ResourceName)
		switch {
		case err != nil:
		case res.ResourceType == resourceTopic:
			t := im.Topics[res.ResourceName]
			if t == nil {
				err = fmt.Errorf("%w: topic %s", cluster.ErrUnknownTopic, res.ResourceName)
				break
			}
			values = cluster.EffectiveTopicConfigs(im, t, h.cfg.NodeID, h.meta.BrokerDefaults())
		case res.ResourceType == resourceBroker:
			values, err = h.brokerConfigs(im, res.ResourceName)
		case res.ResourceType == resourceGroup:
			values = h.groupConfigValues(im, res.ResourceName)
		default:
			err = fmt.Errorf("%w: unsupported resource type %d", cluster.ErrInvalidRequest, res.ResourceType)
		}
		if err != nil {
			rr.ErrorCode = errorCode(err)
			rr.ErrorMessage = errorMessage(err)
			resp.Resources = append(resp.Resources, rr)
			continue
		}
		want := map[string]bool{}
		for _, n := range res.ConfigNames {
			want[n] = true
		}
		for _, cv := range values {
			if res.ConfigNames != nil && !want[cv.Name] {
				continue
			}
			rc := kmsg.NewDescribeConfigsResponseResourceConfig()
			rc.Name = cv.Name
			v := cv.Value
			rc.Value = &v
			if cv.Sensitive {
				// Kafka never shows a password's value, only that it is set.
				rc.Value = nil
			}
			rc.ReadOnly = cv.ReadOnly
			rc.IsSensitive = cv.Sensitive
			rc.Source = kmsg.ConfigSource(cv.Source)
			rc.IsDefault = cv.Source == cluster.SourceDefault
			rc.ConfigType = kmsg.ConfigType(cv.Type)
			if r.IncludeSynonyms && req.Version >= 1 {
				for _, s := range cv.Synonyms {
					sv := &s.Value
					if cv.Sensitive {
						sv = nil
					}
					rc.ConfigSynonyms = append(rc.ConfigSynonyms, kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{
						Name: s.Name, Value: sv, Source: kmsg.ConfigSource(s.Source),
					})
				}
			}
			rr.Configs = append(rr.Configs, rc)
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp, nil
}

// brokerConfigs lists a broker resource's configs.
func (h *Handlers) brokerConfigs(im *cluster.Image, name string) ([]cluster.ConfigValue, error) {
	self := strconv.Itoa(int(h.cfg.NodeID))
	if name == "" {
		// The cluster-wide dynamic defaults only.
		var out []cluster.ConfigValue
		for k, v := range im.BrokerConfigs[""] {
			out = append(out, cluster.ConfigValue{Name: k, Value: v, Source: cluster.SourceDynamicDefaultBroker, Type: cluster.TypeString})
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
		return out, nil
	}
	if name != self {
		return nil, fmt.Errorf("%w: unexpected broker id, expected %s or empty string, but received %s", cluster.ErrInvalidRequest, self, name)
	}
	bd := h.meta.BrokerDefaults()
	names := make([]string, 0, len(bd.Values))
	for k := range bd.Values {
		names = append(names, k)
	}
	for k := range im.BrokerConfigs[""] {
		if _, ok := bd.Values[k]; !ok {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	out := make([]cluster.ConfigValue, 0, len(names))
	for _, k := range names {
		var chain []cluster.ConfigValue
		if v, ok := im.BrokerConfigs[self][k]; ok {
			chain = append(chain, cluster.ConfigValue{Name: k, Value: v, Source: cluster.SourceDynamicBroker})
		}
		if v, ok := im.BrokerConfigs[""][k]; ok {
			chain = append(chain, cluster.ConfigValue{Name: k, Value: v, Source: cluster.SourceDynamicDefaultBroker})
		}
		if v, ok := bd.Values[k]; ok {
			src := cluster.SourceDefault
			if bd.Set[k] {
				src = cluster.SourceStaticBroker
			}
			chain = append(chain, cluster.ConfigValue{Name: k, Value: v, Source: src})
		}
		cv := chain[0]
		cv.Type = cluster.TypeString
		cv.Synonyms = chain
		cv.ReadOnly = !isDynamicBrokerConfig(k)
		cv.Sensitive = sensitiveBrokerConfig(k)
		out = append(out, cv)
	}
	return out, nil
}

// sensitiveBrokerConfig reports whether a broker property is one of
// Kafka's PASSWORD type (a key, a password, a JAAS config with secrets),
// broker-wide or under listener.name.<name>.
func sensitiveBrokerConfig(name string) bool {
	if rest, ok := strings.CutPrefix(name, "listener.name."); ok {
		if _, prop, ok := strings.Cut(rest, "."); ok {
			name = prop
		}
	}
	return strings.HasSuffix(name, ".password") || name == "ssl.keystore.key" || strings.HasSuffix(name, "sasl.jaas.config")
}

func isDynamicBrokerConfig(name string) bool {
	for _, d := range cluster.DynamicBrokerConfigs() {
		if d == name {
			return true
		}
	}
	return false
}
