package group

// Group configs (resource type GROUP, KIP-848/KIP-932): the configs a
// group may override, with Kafka's defaults, and their validation. The
// overrides themselves live in the cluster metadata (Image.GroupConfigs),
// which stores them without interpreting them.

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gokafka/gokafka/cluster"
)

// ConfigDef is one group config with Kafka's default.
type ConfigDef struct {
	Name, Default string
	Type          cluster.ConfigType
	check         func(string) error
}

var configDefs = []ConfigDef{
	{"consumer.heartbeat.interval.ms", "5000", cluster.TypeInt, cluster.AtLeast(1)},
	{"consumer.session.timeout.ms", "45000", cluster.TypeInt, cluster.AtLeast(1)},
	{"share.auto.offset.reset", "latest", cluster.TypeString, checkShareReset},
	{"share.delivery.count.limit", "5", cluster.TypeInt, between(2, 10)},
	{"share.heartbeat.interval.ms", "5000", cluster.TypeInt, cluster.AtLeast(1)},
	{"share.isolation.level", "read_uncommitted", cluster.TypeString, cluster.OneOf("read_committed", "read_uncommitted")},
	{"share.record.lock.duration.ms", "30000", cluster.TypeInt, between(1000, 3600000)},
	{"share.session.timeout.ms", "45000", cluster.TypeInt, cluster.AtLeast(1)},
}

// ConfigDefs lists the group configs, sorted by name.
func ConfigDefs() []ConfigDef { return configDefs }

func between(lo, hi int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("must be between %d and %d", lo, hi)
		}
		return nil
	}
}

func checkShareReset(v string) error {
	switch {
	case v == "latest" || v == "earliest":
		return nil
	case strings.HasPrefix(v, "by_duration:"):
		if _, err := ParseISODuration(strings.TrimPrefix(v, "by_duration:")); err != nil {
			return err
		}
		return nil
	}
	return errors.New("must be latest, earliest or by_duration:<ISO-8601 duration>")
}

// ParseISODuration parses the ISO-8601 durations Kafka's by_duration
// takes: PnDTnHnMn.nS (each part optional, days at most).
func ParseISODuration(s string) (time.Duration, error) {
	bad := fmt.Errorf("invalid ISO-8601 duration %q", s)
	if !strings.HasPrefix(s, "P") || len(s) < 3 {
		return 0, bad
	}
	s = s[1:]
	var d time.Duration
	inTime := false
	for s != "" {
		if s[0] == 'T' {
			if inTime {
				return 0, bad
			}
			inTime = true
			s = s[1:]
			continue
		}
		i := strings.IndexAny(s, "DHMS")
		if i <= 0 {
			return 0, bad
		}
		n, err := strconv.ParseFloat(s[:i], 64)
		if err != nil || n < 0 {
			return 0, bad
		}
		unit := map[byte]time.Duration{'D': 24 * time.Hour, 'H': time.Hour, 'M': time.Minute, 'S': time.Second}[s[i]]
		if (s[i] == 'D') == inTime {
			return 0, bad
		}
		d += time.Duration(n * float64(unit))
		s = s[i+1:]
	}
	return d, nil
}

// ValidateConfigs checks group config overrides; the error wraps
// cluster.ErrInvalidConfig.
func ValidateConfigs(configs map[string]string) error {
	var bad []string
	for k, v := range configs {
		var def *ConfigDef
		for i := range configDefs {
			if configDefs[i].Name == k {
				def = &configDefs[i]
			}
		}
		if def == nil {
			bad = append(bad, k)
			continue
		}
		if err := cluster.CheckConfigType(def.Type, v); err != nil {
			return fmt.Errorf("%w: invalid value %s for configuration %s", cluster.ErrInvalidConfig, v, k)
		}
		if err := def.check(strings.TrimSpace(v)); err != nil {
			return fmt.Errorf("%w: invalid value %s for configuration %s: %v", cluster.ErrInvalidConfig, v, k, err)
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return fmt.Errorf("%w: unknown group configs: %s", cluster.ErrInvalidConfig, strings.Join(bad, ", "))
	}
	return nil
}
