package replication

// ProducerStateLoaded reports whether p's producer state is loaded.
func ProducerStateLoaded(p *Partition) bool {
	p.prod.mu.Lock()
	defer p.prod.mu.Unlock()
	return p.prod.st != nil
}
