package protocol

// ConnectionCounts returns the number of open connections by listener
// name, for metrics.
func (s *Server) ConnectionCounts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.mu.perListener))
	for name, n := range s.mu.perListener {
		out[name] = n
	}
	return out
}
