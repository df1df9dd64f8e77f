package errortexts

// Refreshing says whether c is reading an entry again in the background.
func Refreshing(c *Cache) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		if e.refreshing {
			return true
		}
	}
	return false
}
