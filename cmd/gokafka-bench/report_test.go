package main

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func TestFmtNum(t *testing.T) {
	for v, want := range map[float64]string{
		0: "0", 0.99996: "1.00", 1: "1.00", 0.763: "0.763", 0.00303: "0.00303",
		12.345: "12.35", 224.21: "224.2", 218900.4: "218900", math.NaN(): "–",
	} {
		if got := fmtNum(v); got != want {
			t.Errorf("fmtNum(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestTableIsAlignedMarkdown(t *testing.T) {
	var b bytes.Buffer
	writeTable(&b, [][]string{{"metric", "unit", "value"}, {"MB/s ↑", "MB/s", "12.50"}, {"records/s ↑", "rec/s", "1"}})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("table:\n%s", b.String())
	}
	for _, l := range lines {
		if len([]rune(l)) != len([]rune(lines[0])) || !strings.HasPrefix(l, "|") || !strings.HasSuffix(l, "|") {
			t.Errorf("ragged or unframed line %q in\n%s", l, b.String())
		}
	}
	if !strings.HasSuffix(lines[1], ":|") {
		t.Errorf("numbers column not right-aligned: %q", lines[1])
	}
}

func TestJSONCarriesNaNAsNull(t *testing.T) {
	row := summaryRow{Metric: "x", Median: map[string]float64{"gokafka": math.NaN()}, Spread: map[string]spread{"gokafka": spreadOf(nil)}, Ratio: math.NaN()}
	b, err := json.Marshal([]any{row, metric{Name: "y", Value: math.Inf(1)}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "NaN") || !strings.Contains(string(b), `"ratio_gokafka_to_peer":null`) || !strings.Contains(string(b), `"value":null`) {
		t.Errorf("JSON %s", b)
	}
}
