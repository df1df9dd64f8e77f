package tablestore

// SetMaxQueryAnswer lowers the size of a page read at once, until the
// returned func puts it back.
func SetMaxQueryAnswer(n int) (restore func()) {
	before := maxQueryAnswer
	maxQueryAnswer = n
	return func() { maxQueryAnswer = before }
}
