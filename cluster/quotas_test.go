package cluster

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gokafka/gokafka/quota"
)

func sp(s string) *string { return &s }

func ent(parts ...QuotaEntityPart) QuotaEntity { return QuotaEntity(parts) }
func user(n *string) QuotaEntityPart           { return QuotaEntityPart{Type: "user", Name: n} }
func client(n *string) QuotaEntityPart         { return QuotaEntityPart{Type: "client-id", Name: n} }

func TestClientQuotasAreSetMergedAndRemoved(t *testing.T) {
	s := NewState()
	e := ent(client(sp("app")))
	mustApply(t, s, &Command{Type: CmdClientQuotas, Quotas: []QuotaChange{{Entity: e, Set: map[string]float64{"producer_byte_rate": 1000}}}})
	before := s.Image(-1)
	mustApply(t, s, &Command{Type: CmdClientQuotas, Quotas: []QuotaChange{{Entity: e, Set: map[string]float64{"consumer_byte_rate": 2000}}}})
	im := s.Image(-1)
	got := im.ClientQuotas[e.Key()].Values
	if got["producer_byte_rate"] != 1000 || got["consumer_byte_rate"] != 2000 || len(got) != 2 {
		t.Fatalf("values %v", got)
	}
	// The earlier image is not changed by the later command.
	if v := before.ClientQuotas[e.Key()].Values; len(v) != 1 {
		t.Fatalf("earlier image mutated: %v", v)
	}
	mustApply(t, s, &Command{Type: CmdClientQuotas, Quotas: []QuotaChange{{Entity: e, Remove: []string{"producer_byte_rate", "consumer_byte_rate"}}}})
	if _, ok := s.Image(-1).ClientQuotas[e.Key()]; ok {
		t.Fatal("entity without values kept")
	}
}

func TestClientQuotasSurviveASnapshot(t *testing.T) {
	s := NewState()
	mustApply(t, s, &Command{Type: CmdClientQuotas, Quotas: []QuotaChange{
		{Entity: ent(user(nil), client(sp("a"))), Set: map[string]float64{"request_percentage": 50}},
		{Entity: ent(client(nil)), Set: map[string]float64{"producer_byte_rate": 1 << 20}},
	}})
	b, err := s.MarshalSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	r := NewState()
	if err := r.RestoreSnapshot(b); err != nil {
		t.Fatal(err)
	}
	got := r.Image(-1).QuotaLimits()
	want := quota.Limits{
		{User: quota.DefaultName, ClientID: quota.Of("a")}: {"request_percentage": 50},
		{ClientID: quota.DefaultName}:                      {"producer_byte_rate": 1 << 20},
	}
	if len(got) != len(want) {
		t.Fatalf("restored %v, want %v", got, want)
	}
	for e, kv := range want {
		for k, v := range kv {
			if got[e][k] != v {
				t.Fatalf("restored %v, want %v", got, want)
			}
		}
	}
}

func TestQuotaValidationAsKafka(t *testing.T) {
	for _, tc := range []struct {
		name string
		ch   QuotaChange
	}{
		{"empty entity", QuotaChange{Set: map[string]float64{"producer_byte_rate": 1}}},
		{"unknown key", QuotaChange{Entity: ent(client(sp("a"))), Set: map[string]float64{"bogus": 1}}},
		{"unknown key removed", QuotaChange{Entity: ent(client(sp("a"))), Remove: []string{"bogus"}}},
		{"unknown entity type", QuotaChange{Entity: ent(QuotaEntityPart{Type: "group", Name: sp("g")}), Set: map[string]float64{"producer_byte_rate": 1}}},
		{"duplicate type", QuotaChange{Entity: ent(client(sp("a")), client(sp("b"))), Set: map[string]float64{"producer_byte_rate": 1}}},
		{"empty name", QuotaChange{Entity: ent(user(sp(""))), Set: map[string]float64{"producer_byte_rate": 1}}},
		{"fractional long", QuotaChange{Entity: ent(client(sp("a"))), Set: map[string]float64{"producer_byte_rate": 10.5}}},
		{"zero", QuotaChange{Entity: ent(client(sp("a"))), Set: map[string]float64{"consumer_byte_rate": 0}}},
		{"bad ip", QuotaChange{Entity: ent(QuotaEntityPart{Type: "ip", Name: sp("not-an-ip")}), Set: map[string]float64{"connection_creation_rate": 1}}},
		{"ip with user", QuotaChange{Entity: ent(QuotaEntityPart{Type: "ip", Name: sp("10.0.0.1")}, user(sp("u"))), Set: map[string]float64{"connection_creation_rate": 1}}},
		{"client key on ip", QuotaChange{Entity: ent(QuotaEntityPart{Type: "ip"}), Set: map[string]float64{"producer_byte_rate": 1}}},
	} {
		if err := ValidateQuotaChange(tc.ch); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("%s: %v, want INVALID_REQUEST", tc.name, err)
		}
	}
	ok := QuotaChange{Entity: ent(user(nil), client(sp("a"))), Set: map[string]float64{"producer_byte_rate": 1024, "request_percentage": 12.5}}
	if err := ValidateQuotaChange(ok); err != nil {
		t.Fatalf("valid change refused: %v", err)
	}
}

func TestDescribeClientQuotasMatchesAsKafka(t *testing.T) {
	s := NewState()
	set := map[string]float64{"producer_byte_rate": 1}
	mustApply(t, s, &Command{Type: CmdClientQuotas, Quotas: []QuotaChange{
		{Entity: ent(client(sp("a"))), Set: set},
		{Entity: ent(client(nil)), Set: set},
		{Entity: ent(user(sp("u")), client(sp("a"))), Set: set},
		{Entity: ent(user(nil)), Set: set},
	}})
	im := s.Image(-1)
	keys := func(f []QuotaFilter, strict bool) []string {
		t.Helper()
		cqs, err := im.DescribeClientQuotas(f, strict)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, cq := range cqs {
			out = append(out, cq.Entity.Key())
		}
		return out
	}
	eq := func(got []string, want ...string) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("got %q, want %q", got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("got %q, want %q", got, want)
			}
		}
	}
	eq(keys([]QuotaFilter{{Type: "client-id", MatchType: 0, Match: sp("a")}}, false), `client-id="a"`, `client-id="a",user="u"`)
	eq(keys([]QuotaFilter{{Type: "client-id", MatchType: 0, Match: sp("a")}}, true), `client-id="a"`)
	eq(keys([]QuotaFilter{{Type: "client-id", MatchType: 1}}, false), `client-id=<default>`)
	eq(keys([]QuotaFilter{{Type: "client-id", MatchType: 2}}, true), `client-id="a"`, `client-id=<default>`)
	eq(keys([]QuotaFilter{{Type: "user", MatchType: 2}}, false), `client-id="a",user="u"`, `user=<default>`)
	eq(keys(nil, false), `client-id="a"`, `client-id="a",user="u"`, `client-id=<default>`, `user=<default>`)
	eq(keys(nil, true))

	if _, err := im.DescribeClientQuotas([]QuotaFilter{{Type: "user", MatchType: 2}, {Type: "user", MatchType: 1}}, false); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("duplicate type: %v, want INVALID_REQUEST", err)
	}
	if _, err := im.DescribeClientQuotas([]QuotaFilter{{Type: "group", MatchType: 2}}, false); !errors.Is(err, kerr.UnsupportedVersion) {
		t.Errorf("unknown type: %v, want UNSUPPORTED_VERSION", err)
	}
	if _, err := im.DescribeClientQuotas([]QuotaFilter{{Type: "ip", MatchType: 2}, {Type: "user", MatchType: 2}}, false); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("ip with user: %v, want INVALID_REQUEST", err)
	}
	if _, err := im.DescribeClientQuotas([]QuotaFilter{{Type: "user", MatchType: 7}}, false); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("bad match type: %v, want INVALID_REQUEST", err)
	}
}
