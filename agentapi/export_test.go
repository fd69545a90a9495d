package agentapi

// SkipPortCheck makes Start launch agentapi on its port without testing
// the port first, until the returned func is called: the test then sees
// agentapi's own "address already in use" and the retry after it.
func SkipPortCheck() (restore func()) {
	old := portFree
	portFree = func(int) bool { return true }
	return func() { portFree = old }
}
