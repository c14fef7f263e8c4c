package replication

// ProducerStateLoaded reports whether p's producer state is loaded.
func ProducerStateLoaded(p *Partition) bool {
	p.prod.mu.Lock()
	defer p.prod.mu.Unlock()
	return p.prod.st != nil
}

// ReconcileVisits is how many partition records m's metadata application
// has examined.
func ReconcileVisits(m *Manager) int64 { return m.reconcileVisits.Load() }

// CheckISRs runs the ISR expiry check of every led partition now.
func (m *Manager) CheckISRs() { m.checkISRs() }

// FetchRequestsBuilt counts the fetch requests this manager's fetchers
// built by reading every partition they follow.
func (m *Manager) FetchRequestsBuilt() int64 {
	m.fetch.mu.Lock()
	defer m.fetch.mu.Unlock()
	var n int64
	for _, f := range m.fetch.byKey {
		n += f.builds.Load()
	}
	return n
}
