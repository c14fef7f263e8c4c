package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// num is a float64 that encodes NaN and ±Inf (a metric with no value) as
// JSON null, which encoding/json would otherwise refuse.
type num float64

func (n num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

func (s spread) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Min num `json:"min"`
		Max num `json:"max"`
		Rel num `json:"rel"`
	}{num(s.Min), num(s.Max), num(s.Rel)})
}

func (r summaryRow) MarshalJSON() ([]byte, error) {
	med := map[string]num{}
	for k, v := range r.Median {
		med[k] = num(v)
	}
	type plain summaryRow // no MarshalJSON: no recursion
	return json.Marshal(struct {
		plain
		Median map[string]num `json:"median"`
		Ratio  num            `json:"ratio_gokafka_to_peer"`
	}{plain(r), med, num(r.Ratio)})
}

func (m metric) MarshalJSON() ([]byte, error) {
	type plain metric
	return json.Marshal(struct {
		plain
		Value num `json:"value"`
	}{plain(m), num(m.Value)})
}

// fmtNum prints a metric value with three significant digits, or "–" for
// none.
func fmtNum(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "–"
	case v == 0:
		return "0"
	case math.Abs(v) >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case math.Abs(v) >= 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case math.Abs(v) >= 0.995: // ≥ 0.995 rounds to 1.00, not to "1"
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}

func fmtSpread(s spread) string {
	if math.IsNaN(s.Min) {
		return "–"
	}
	rel := "–"
	if !math.IsNaN(s.Rel) {
		rel = strconv.FormatFloat(100*s.Rel, 'f', 0, 64) + "%"
	}
	return fmt.Sprintf("%s–%s (%s)", fmtNum(s.Min), fmtNum(s.Max), rel)
}

// writeTables prints one Markdown pipe table per scenario: aligned so that
// it reads as plain text and pastes into docs as is.
func writeTables(w io.Writer, results []*scenarioResult, rounds int) {
	for _, res := range results {
		fmt.Fprintf(w, "### %s: %s\n\n", res.Name, res.Title)
		fmt.Fprintf(w, "%s. %d round(s) per system, alternating, each on a fresh server; %.0f s in all.\n", res.Settings, rounds, res.Elapsed)
		for _, n := range res.Notes {
			fmt.Fprintf(w, "Note: %s.\n", n)
		}
		fmt.Fprintln(w)
		header := []string{"metric", "unit"}
		for _, s := range res.Systems {
			header = append(header, s+" median")
		}
		if len(res.Systems) > 1 {
			header = append(header, res.Systems[0]+"/"+res.Systems[1])
		}
		for _, s := range res.Systems {
			header = append(header, s+" min–max (spread)")
		}
		rows := [][]string{header}
		for _, row := range res.Summary {
			name := row.Metric
			if row.Higher {
				name += " ↑"
			} else {
				name += " ↓"
			}
			cells := []string{name, row.Unit}
			for _, s := range res.Systems {
				cells = append(cells, fmtNum(row.Median[s]))
			}
			if len(res.Systems) > 1 {
				cells = append(cells, fmtNum(row.Ratio))
			}
			for _, s := range res.Systems {
				cells = append(cells, fmtSpread(row.Spread[s]))
			}
			rows = append(rows, cells)
		}
		writeTable(w, rows)
		for _, rr := range res.Rounds {
			if rr.Err != "" {
				fmt.Fprintf(w, "\nround %d %s failed: %s\n", rr.Round, rr.System, firstLine(rr.Err))
			}
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "↑ higher is better, ↓ lower is better. MB = 10^6 bytes of record values. Server CPU is utime+stime of all server processes over the measured phase.")
}

func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}

func writeTable(w io.Writer, rows [][]string) {
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	line := func(r []string) {
		var b strings.Builder
		b.WriteString("|")
		for i, c := range r {
			pad := widths[i] - len([]rune(c))
			if i >= 2 { // numbers right-aligned
				b.WriteString(" " + strings.Repeat(" ", pad) + c + " |")
			} else {
				b.WriteString(" " + c + strings.Repeat(" ", pad) + " |")
			}
		}
		fmt.Fprintln(w, b.String())
	}
	line(rows[0])
	var sep strings.Builder
	sep.WriteString("|")
	for i, wd := range widths {
		if i >= 2 {
			sep.WriteString(strings.Repeat("-", wd+1) + ":|")
		} else {
			sep.WriteString(strings.Repeat("-", wd+2) + "|")
		}
	}
	fmt.Fprintln(w, sep.String())
	for _, r := range rows[1:] {
		line(r)
	}
}

type jsonReport struct {
	Date      string            `json:"date"`
	Host      map[string]string `json:"host"`
	Args      []string          `json:"args"`
	Scenarios []*scenarioResult `json:"scenarios"`
}

func writeJSON(path string, results []*scenarioResult) error {
	host, _ := os.Hostname()
	rep := jsonReport{
		Date: time.Now().UTC().Format(time.RFC3339),
		Host: map[string]string{
			"hostname": host,
			"cpus":     strconv.Itoa(runtime.NumCPU()),
			"go":       runtime.Version(),
			"os_arch":  runtime.GOOS + "/" + runtime.GOARCH,
		},
		Args:      os.Args[1:],
		Scenarios: results,
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
