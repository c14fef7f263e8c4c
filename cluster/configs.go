package cluster

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ConfigType is a config's type with the codes DescribeConfigs uses.
type ConfigType int8

const (
	TypeBoolean ConfigType = 1
	TypeString  ConfigType = 2
	TypeInt     ConfigType = 3
	TypeShort   ConfigType = 4
	TypeLong    ConfigType = 5
	TypeDouble  ConfigType = 6
	TypeList    ConfigType = 7
)

// ConfigDef describes one topic config: its type, Kafka's default, and the
// broker property that supplies the default when the topic sets none.
type ConfigDef struct {
	Name          string
	Type          ConfigType
	Default       string
	BrokerSynonym string
	// Check validates a value beyond its type; nil when the type is enough.
	Check func(v string) error
}

// AtLeast checks that an integer config is at least minVal.
func AtLeast(minVal int64) func(string) error { return atLeast(minVal) }

// OneOf checks that a config is one of values.
func OneOf(values ...string) func(string) error { return oneOf(values...) }

func atLeast(minVal int64) func(string) error {
	return func(v string) error {
		n, _ := strconv.ParseInt(v, 10, 64)
		if n < minVal {
			return fmt.Errorf("value %s must be at least %d", v, minVal)
		}
		return nil
	}
}

func oneOf(values ...string) func(string) error {
	return func(v string) error {
		for _, ok := range values {
			if v == ok {
				return nil
			}
		}
		return fmt.Errorf("value %q must be one of %s", v, strings.Join(values, ", "))
	}
}

func listOf(values ...string) func(string) error {
	return func(v string) error {
		if strings.TrimSpace(v) == "" {
			return nil
		}
		for _, item := range strings.Split(v, ",") {
			if err := oneOf(values...)(strings.TrimSpace(item)); err != nil {
				return err
			}
		}
		return nil
	}
}

func ratio(v string) error {
	f, _ := strconv.ParseFloat(v, 64)
	if f < 0 || f > 1 {
		return fmt.Errorf("value %s must be between 0 and 1", v)
	}
	return nil
}

// throttledReplicas checks a *.replication.throttled.replicas value as
// Kafka does: empty, "*", or partition:broker entries.
func throttledReplicas(v string) error {
	if v == "" || v == "*" {
		return nil
	}
	for _, item := range strings.Split(v, ",") {
		p, b, ok := strings.Cut(strings.TrimSpace(item), ":")
		_, err1 := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		_, err2 := strconv.ParseInt(strings.TrimSpace(b), 10, 32)
		if !ok || err1 != nil || err2 != nil {
			return fmt.Errorf("%q must be empty, * or a list of partitionId:brokerId entries", v)
		}
	}
	return nil
}

// brokerOnlyConfigDefs are the dynamic broker configs that supply no topic
// config: the replication throttle rates (bytes per second), set per
// broker or cluster-wide through IncrementalAlterConfigs as in Kafka.
var brokerOnlyConfigDefs = []ConfigDef{
	{Name: "follower.replication.throttled.rate", Type: TypeLong, Default: strconv.FormatInt(math.MaxInt64, 10), BrokerSynonym: "follower.replication.throttled.rate", Check: atLeast(0)},
	{Name: "leader.replication.throttled.rate", Type: TypeLong, Default: strconv.FormatInt(math.MaxInt64, 10), BrokerSynonym: "leader.replication.throttled.rate", Check: atLeast(0)},
}

// topicConfigDefs are the topic configs gokafka accepts, with Kafka's names,
// types and defaults.
var topicConfigDefs = []ConfigDef{
	{Name: "cleanup.policy", Type: TypeList, Default: "delete", BrokerSynonym: "log.cleanup.policy", Check: listOf("delete", "compact")},
	{Name: "compression.type", Type: TypeString, Default: "producer", BrokerSynonym: "compression.type", Check: oneOf("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")},
	{Name: "delete.retention.ms", Type: TypeLong, Default: "86400000", BrokerSynonym: "log.cleaner.delete.retention.ms", Check: atLeast(0)},
	{Name: "file.delete.delay.ms", Type: TypeLong, Default: "60000", BrokerSynonym: "log.segment.delete.delay.ms", Check: atLeast(0)},
	{Name: "flush.messages", Type: TypeLong, Default: strconv.FormatInt(math.MaxInt64, 10), BrokerSynonym: "log.flush.interval.messages", Check: atLeast(1)},
	{Name: "follower.replication.throttled.replicas", Type: TypeList, Default: "", Check: throttledReplicas},
	{Name: "flush.ms", Type: TypeLong, Default: strconv.FormatInt(math.MaxInt64, 10), BrokerSynonym: "log.flush.interval.ms", Check: atLeast(0)},
	{Name: "index.interval.bytes", Type: TypeInt, Default: "4096", BrokerSynonym: "log.index.interval.bytes", Check: atLeast(0)},
	{Name: "leader.replication.throttled.replicas", Type: TypeList, Default: "", Check: throttledReplicas},
	{Name: "max.compaction.lag.ms", Type: TypeLong, Default: strconv.FormatInt(math.MaxInt64, 10), BrokerSynonym: "log.cleaner.max.compaction.lag.ms", Check: atLeast(1)},
	{Name: "max.message.bytes", Type: TypeInt, Default: "1048588", BrokerSynonym: "message.max.bytes", Check: atLeast(0)},
	{Name: "message.timestamp.after.max.ms", Type: TypeLong, Default: strconv.FormatInt(math.MaxInt64, 10), BrokerSynonym: "log.message.timestamp.after.max.ms", Check: atLeast(0)},
	{Name: "message.timestamp.before.max.ms", Type: TypeLong, Default: strconv.FormatInt(math.MaxInt64, 10), BrokerSynonym: "log.message.timestamp.before.max.ms", Check: atLeast(0)},
	{Name: "message.timestamp.type", Type: TypeString, Default: "CreateTime", BrokerSynonym: "log.message.timestamp.type", Check: oneOf("CreateTime", "LogAppendTime")},
	{Name: "min.cleanable.dirty.ratio", Type: TypeDouble, Default: "0.5", BrokerSynonym: "log.cleaner.min.cleanable.ratio", Check: ratio},
	{Name: "min.compaction.lag.ms", Type: TypeLong, Default: "0", BrokerSynonym: "log.cleaner.min.compaction.lag.ms", Check: atLeast(0)},
	{Name: "min.insync.replicas", Type: TypeInt, Default: "1", BrokerSynonym: "min.insync.replicas", Check: atLeast(1)},
	{Name: "preallocate", Type: TypeBoolean, Default: "false", BrokerSynonym: "log.preallocate"},
	{Name: "retention.bytes", Type: TypeLong, Default: "-1", BrokerSynonym: "log.retention.bytes"},
	{Name: "retention.ms", Type: TypeLong, Default: "604800000", BrokerSynonym: "log.retention.ms", Check: atLeast(-1)},
	{Name: "segment.bytes", Type: TypeInt, Default: "1073741824", BrokerSynonym: "log.segment.bytes", Check: atLeast(14)},
	{Name: "segment.index.bytes", Type: TypeInt, Default: "10485760", BrokerSynonym: "log.index.size.max.bytes", Check: atLeast(4)},
	{Name: "segment.jitter.ms", Type: TypeLong, Default: "0", BrokerSynonym: "log.roll.jitter.ms", Check: atLeast(0)},
	{Name: "segment.ms", Type: TypeLong, Default: "604800000", BrokerSynonym: "log.roll.ms", Check: atLeast(1)},
	{Name: "unclean.leader.election.enable", Type: TypeBoolean, Default: "false", BrokerSynonym: "unclean.leader.election.enable"},
}

var topicConfigIndex = func() map[string]*ConfigDef {
	m := make(map[string]*ConfigDef, len(topicConfigDefs))
	for i := range topicConfigDefs {
		m[topicConfigDefs[i].Name] = &topicConfigDefs[i]
	}
	return m
}()

// TopicConfigDefs lists the known topic configs, sorted by name.
func TopicConfigDefs() []ConfigDef { return topicConfigDefs }

// TopicConfigDef returns the definition of a topic config or nil.
func TopicConfigDef(name string) *ConfigDef { return topicConfigIndex[name] }

// CheckConfigType validates v against t.
func CheckConfigType(t ConfigType, v string) error { return checkType(t, v) }

// checkType validates v against t.
func checkType(t ConfigType, v string) error {
	var err error
	switch t {
	case TypeBoolean:
		if v != "true" && v != "false" {
			err = fmt.Errorf("value %q is not a boolean", v)
		}
	case TypeInt:
		_, err = strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	case TypeShort:
		_, err = strconv.ParseInt(strings.TrimSpace(v), 10, 16)
	case TypeLong:
		_, err = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	case TypeDouble:
		_, err = strconv.ParseFloat(strings.TrimSpace(v), 64)
	}
	return err
}

// ValidateTopicConfig checks that name is a known topic config and value is
// valid for it. The error wraps ErrInvalidConfig.
func ValidateTopicConfig(name string, value *string) error {
	def := topicConfigIndex[name]
	if def == nil {
		return fmt.Errorf("%w: unknown topic config name: %s", ErrInvalidConfig, name)
	}
	if value == nil {
		return fmt.Errorf("%w: null value not supported for topic configs: %s", ErrInvalidConfig, name)
	}
	if err := checkType(def.Type, *value); err != nil {
		return fmt.Errorf("%w: invalid value %s for configuration %s", ErrInvalidConfig, *value, name)
	}
	if def.Check != nil {
		if err := def.Check(strings.TrimSpace(*value)); err != nil {
			return fmt.Errorf("%w: invalid value %s for configuration %s: %v", ErrInvalidConfig, *value, name, err)
		}
	}
	return nil
}

// ValidateTopicConfigSet checks what single values cannot show, as Kafka's
// LogConfig.validateValues does: min.compaction.lag.ms may not exceed
// max.compaction.lag.ms (either taken from its default when unset).
func ValidateTopicConfigSet(configs map[string]string) error {
	lag := func(name string) int64 {
		v, ok := configs[name]
		if !ok {
			v = topicConfigIndex[name].Default
		}
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		return n
	}
	if lo, hi := lag("min.compaction.lag.ms"), lag("max.compaction.lag.ms"); lo > hi {
		return fmt.Errorf("%w: conflict topic config setting min.compaction.lag.ms (%d) > max.compaction.lag.ms (%d)", ErrInvalidConfig, lo, hi)
	}
	return nil
}

// ConfigSource tells where an effective config value comes from, with the
// codes DescribeConfigs v1+ uses.
type ConfigSource int8

const (
	SourceDynamicTopic         ConfigSource = 1
	SourceDynamicBroker        ConfigSource = 2
	SourceDynamicDefaultBroker ConfigSource = 3
	SourceStaticBroker         ConfigSource = 4
	SourceDefault              ConfigSource = 5
)

// ConfigValue is a config with its effective value and source.
type ConfigValue struct {
	Name      string
	Value     string
	Source    ConfigSource
	Type      ConfigType
	Sensitive bool
	ReadOnly  bool
	// Synonyms lists the lower-precedence sources, highest first.
	Synonyms []ConfigValue
}

// BrokerDefaults are the broker's static config values, by property name,
// and which of them the operator set (the rest being Kafka's defaults).
type BrokerDefaults struct {
	Values map[string]string
	Set    map[string]bool
}

// EffectiveTopicConfigs resolves every topic config for topic t with Kafka's
// precedence: topic override, dynamic broker config for this node, dynamic
// cluster default, static broker config, default.
func EffectiveTopicConfigs(im *Image, t *TopicInfo, nodeID int32, bd BrokerDefaults) []ConfigValue {
	out := make([]ConfigValue, 0, len(topicConfigDefs))
	for _, def := range topicConfigDefs {
		out = append(out, resolveTopicConfig(im, t, nodeID, bd, &def))
	}
	return out
}

// TopicConfigValue returns the effective value of one topic config.
func TopicConfigValue(im *Image, t *TopicInfo, nodeID int32, bd BrokerDefaults, name string) string {
	def := topicConfigIndex[name]
	if def == nil {
		return ""
	}
	return resolveTopicConfig(im, t, nodeID, bd, def).Value
}

func resolveTopicConfig(im *Image, t *TopicInfo, nodeID int32, bd BrokerDefaults, def *ConfigDef) ConfigValue {
	var chain []ConfigValue
	add := func(name, v string, src ConfigSource) {
		chain = append(chain, ConfigValue{Name: name, Value: v, Source: src, Type: def.Type})
	}
	if t != nil {
		if v, ok := t.Configs[def.Name]; ok {
			add(def.Name, v, SourceDynamicTopic)
		}
	}
	if syn := def.BrokerSynonym; syn != "" {
		if im != nil {
			if v, ok := im.BrokerConfigs[strconv.Itoa(int(nodeID))][syn]; ok {
				add(syn, v, SourceDynamicBroker)
			}
			if v, ok := im.BrokerConfigs[""][syn]; ok {
				add(syn, v, SourceDynamicDefaultBroker)
			}
		}
		if v, ok := bd.Values[syn]; ok {
			src := SourceDefault
			if bd.Set[syn] {
				src = SourceStaticBroker
			}
			add(syn, v, src)
		}
	}
	cv := ConfigValue{Name: def.Name, Value: def.Default, Source: SourceDefault, Type: def.Type}
	if len(chain) > 0 {
		cv.Value, cv.Source = chain[0].Value, chain[0].Source
	}
	cv.Synonyms = chain
	return cv
}

// MinInsyncReplicas returns topic t's effective min.insync.replicas (1 when
// unset or invalid), as the controller's elections and the leaders' ISR
// rules both read it.
func MinInsyncReplicas(im *Image, t *TopicInfo, nodeID int32, bd BrokerDefaults) int {
	n, err := strconv.Atoi(TopicConfigValue(im, t, nodeID, bd, "min.insync.replicas"))
	if err != nil || n < 1 {
		return 1
	}
	return n
}
