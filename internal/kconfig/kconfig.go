// Package kconfig parses the value types of Kafka's configuration
// properties that more than one gokafka package reads.
package kconfig

import "strings"

// List parses a property of Kafka's LIST type (listeners, cipher suites,
// enabled mechanisms, cleanup.policy, host names): comma-separated
// entries with surrounding spaces trimmed and empty entries dropped. An
// empty or blank value is an empty list (nil).
func List(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
