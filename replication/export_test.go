package replication

// ProducerStateLoaded reports whether p's producer state is loaded.
func ProducerStateLoaded(p *Partition) bool {
	p.prod.mu.Lock()
	defer p.prod.mu.Unlock()
	return p.prod.st != nil
}

// CheckISRs runs the ISR expiry check of every led partition now.
func (m *Manager) CheckISRs() { m.checkISRs() }
