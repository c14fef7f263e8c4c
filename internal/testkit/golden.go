package testkit

import (
	"bytes"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

var updateGolden bool

func init() {
	flag.BoolVar(&updateGolden, "update-golden", false, "rewrite golden files from the code under test")
}

// GoldenHex compares got, by case name, with the golden file at path: one
// line per case, its name and its bytes in hex. With -update-golden it
// writes the file from got instead.
func GoldenHex(t testing.TB, path string, got map[string][]byte) {
	t.Helper()
	names := make([]string, 0, len(got))
	for n := range got {
		names = append(names, n)
	}
	sort.Strings(names)
	if updateGolden {
		var b strings.Builder
		for _, n := range names {
			fmt.Fprintf(&b, "%s %s\n", n, hex.EncodeToString(got[n]))
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (write it with -update-golden): %v", err)
	}
	want := map[string][]byte{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		name, h, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("%s: malformed line %q", path, line)
		}
		b, err := hex.DecodeString(h)
		if err != nil {
			t.Fatalf("%s: case %s: %v", path, name, err)
		}
		want[name] = b
	}
	if len(want) != len(got) {
		t.Errorf("%s holds %d cases, the test has %d", path, len(want), len(got))
	}
	for _, n := range names {
		if w, ok := want[n]; !ok {
			t.Errorf("case %s: not in %s", n, path)
		} else if !bytes.Equal(got[n], w) {
			t.Errorf("case %s: bytes differ from %s\n got %x\nwant %x", n, path, got[n], w)
		}
	}
}
