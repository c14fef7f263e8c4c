package coordinator

import (
	"fmt"
	"testing"
)

func TestPartitionForMatchesKafka(t *testing.T) {
	// Java: "hello".hashCode() == 99162322; "polygenelubricants".hashCode()
	// == Integer.MIN_VALUE, which Kafka's Utils.abs maps to 0.
	if h := javaStringHashCode("hello"); h != 99162322 {
		t.Fatalf(`hashCode("hello") = %d, want 99162322`, h)
	}
	if h := javaStringHashCode("polygenelubricants"); h != -2147483648 {
		t.Fatalf(`hashCode("polygenelubricants") = %d, want MIN_VALUE`, h)
	}
	for _, c := range []struct {
		group string
		want  int32
	}{{"hello", 22}, {"polygenelubricants", 0}, {"", 0}} {
		if got := PartitionFor(c.group, 50); got != c.want {
			t.Fatalf("PartitionFor(%q, 50) = %d, want %d", c.group, got, c.want)
		}
	}
	// A negative hash code is negated (Math.abs), not masked.
	var neg string
	var h int32
	for i := 0; h >= 0; i++ {
		neg = fmt.Sprintf("group-%d", i)
		h = javaStringHashCode(neg)
	}
	if got := PartitionFor(neg, 50); got != (-h)%50 || got == (h&0x7fffffff)%50 {
		t.Fatalf("PartitionFor(%q) = %d; want abs(%d) %% 50 = %d", neg, got, h, (-h)%50)
	}
}
