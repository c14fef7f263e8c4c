package handlers

// Floors on the segment settings a client may set.
//
// A topic whose segment.bytes, segment.index.bytes or segment.ms is tiny
// rolls a segment (three open files) every few records or milliseconds:
// one CreateTopics or AlterConfigs request could make the broker open and
// keep thousands of files. Kafka closed this with KIP-1030: segment.bytes
// at least 1 MiB (Kafka 4.0), segment.index.bytes at least 1 KiB and
// segment.ms at least one minute (its later half). gokafka applies all
// three, with their broker-level synonyms set as dynamic broker configs,
// to what clients send in CreateTopics, AlterConfigs and
// IncrementalAlterConfigs, answering INVALID_CONFIG. The operator's own
// settings (the broker's configuration file and environment) are not
// bound by them, so a test or a small deployment may still use small
// segments.

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gokafka/gokafka/cluster"
)

var clientConfigFloors = map[string]int64{
	"segment.bytes":            1 << 20,
	"log.segment.bytes":        1 << 20,
	"segment.index.bytes":      1 << 10,
	"log.index.size.max.bytes": 1 << 10,
	"segment.ms":               60000,
	"log.roll.ms":              60000,
}

// checkClientConfig refuses a value below its floor with INVALID_CONFIG.
// Values that do not parse are left to the full validation.
func checkClientConfig(name string, value *string) error {
	floor, ok := clientConfigFloors[name]
	if !ok || value == nil {
		return nil
	}
	v, err := strconv.ParseInt(strings.TrimSpace(*value), 10, 64)
	if err != nil || v >= floor {
		return nil
	}
	return fmt.Errorf("%w: invalid value %s for configuration %s: value must be at least %d", cluster.ErrInvalidConfig, *value, name, floor)
}
