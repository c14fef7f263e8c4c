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
