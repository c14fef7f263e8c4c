package kconfig

import (
	"slices"
	"testing"
)

func TestListTrimsAndDropsEmptyEntries(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"  ", nil},
		{"a", []string{"a"}},
		{" a , b,,c ,", []string{"a", "b", "c"}},
		{"compact, delete", []string{"compact", "delete"}},
	} {
		if got := List(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("List(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
