package worker

// Hooks are calls a worker's Run makes at the points tests watch; a Dispatcher's Run has none.
type Hooks struct {
	// Idled is called before Run waits with nothing due that it could take (nil for none).
	Idled func()
}
