package group

import (
	"testing"
	"time"
)

func TestGroupConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		k, v string
		ok   bool
	}{
		{"share.auto.offset.reset", "earliest", true},
		{"share.auto.offset.reset", "by_duration:PT1H30M", true},
		{"share.auto.offset.reset", "by_duration:1h", false},
		{"share.auto.offset.reset", "none", false},
		{"share.record.lock.duration.ms", "15000", true},
		{"share.record.lock.duration.ms", "10", false},
		{"share.isolation.level", "read_committed", true},
		{"no.such.config", "1", false},
	} {
		err := ValidateConfigs(map[string]string{tc.k: tc.v})
		if (err == nil) != tc.ok {
			t.Errorf("%s=%s: %v", tc.k, tc.v, err)
		}
	}
	if d, err := ParseISODuration("P1DT2H3M4.5S"); err != nil || d != 26*time.Hour+3*time.Minute+4500*time.Millisecond {
		t.Errorf("ParseISODuration: %v %v", d, err)
	}
}
