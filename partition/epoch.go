package partition

// epochEntry says that leader epoch `epoch` wrote its first batch at startOffset.
type epochEntry struct {
	epoch       int32
	startOffset int64
}

// epochCache is Kafka's LeaderEpochFileCache without the file: the owning
// Log persists it. Invariant: entries are strictly increasing in epoch and
// non-decreasing in startOffset. Not goroutine-safe; guarded by Log.mu.
type epochCache struct {
	entries []epochEntry
	dirty   bool // changed since last written to leader-epoch-checkpoint
}

func (c *epochCache) latest() (epochEntry, bool) {
	if len(c.entries) == 0 {
		return epochEntry{}, false
	}
	return c.entries[len(c.entries)-1], true
}

func (c *epochCache) latestEpoch() int32 {
	if e, ok := c.latest(); ok {
		return e.epoch
	}
	return -1
}

// assign records that epoch starts at startOffset (LeaderEpochFileCache.assign):
// a no-op if epoch is already the latest and starts no later; otherwise
// entries that would break monotonicity (epoch >= new or start >= new) are
// dropped from the end first.
func (c *epochCache) assign(epoch int32, startOffset int64) bool {
	if epoch < 0 || startOffset < 0 {
		return false
	}
	if l, ok := c.latest(); ok && l.epoch == epoch && startOffset >= l.startOffset {
		return false
	}
	n := len(c.entries)
	for n > 0 && (c.entries[n-1].epoch >= epoch || c.entries[n-1].startOffset >= startOffset) {
		n--
	}
	c.entries = append(c.entries[:n], epochEntry{epoch: epoch, startOffset: startOffset})
	c.dirty = true
	return true
}

// truncateFromEnd removes entries starting at or after endOffset (the log
// was truncated to endOffset).
func (c *epochCache) truncateFromEnd(endOffset int64) {
	n := len(c.entries)
	for n > 0 && c.entries[n-1].startOffset >= endOffset {
		n--
	}
	if n != len(c.entries) {
		c.entries = c.entries[:n]
		c.dirty = true
	}
}

// truncateFromStart drops entries wholly below startOffset; the last of
// them is kept, moved to start at startOffset, because its epoch still owns
// the offsets from there to the next entry.
func (c *epochCache) truncateFromStart(startOffset int64) {
	i := 0
	for i < len(c.entries) && c.entries[i].startOffset <= startOffset {
		i++
	}
	if i == 0 {
		return
	}
	last := c.entries[i-1]
	if i == 1 && last.startOffset == startOffset {
		return
	}
	last.startOffset = startOffset
	rest := append([]epochEntry{last}, c.entries[i:]...)
	c.entries = rest
	c.dirty = true
}

func (c *epochCache) clear() {
	if len(c.entries) > 0 {
		c.entries = nil
		c.dirty = true
	}
}

// endOffsetFor is LeaderEpochFileCache.endOffsetFor: the largest epoch <=
// requested and the start offset of the epoch after it (logEndOffset if it
// is the latest); (-1, -1) when requested is undefined or above every known
// epoch. A request below the earliest epoch answers (requested, earliest start).
func (c *epochCache) endOffsetFor(requested int32, logEndOffset int64) (int32, int64) {
	if requested < 0 {
		return -1, -1
	}
	l, ok := c.latest()
	if ok && l.epoch == requested {
		return requested, logEndOffset
	}
	// higher: first entry with epoch > requested
	hi := -1
	for i, e := range c.entries {
		if e.epoch > requested {
			hi = i
			break
		}
	}
	if hi < 0 {
		return -1, -1
	}
	if hi == 0 {
		return requested, c.entries[0].startOffset
	}
	return c.entries[hi-1].epoch, c.entries[hi].startOffset
}

// epochForOffset returns the epoch whose range holds offset, -1 if none.
func (c *epochCache) epochForOffset(offset int64) int32 {
	ep := int32(-1)
	for _, e := range c.entries {
		if e.startOffset > offset {
			break
		}
		ep = e.epoch
	}
	return ep
}

func (c *epochCache) snapshot() []epochEntry {
	return append([]epochEntry(nil), c.entries...)
}
