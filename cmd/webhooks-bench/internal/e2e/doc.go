// Package e2e holds what the benchmark's parent process and its child programs share: the loopback
// receiver, the counting go-redis hook, the event of the workload, a bounded parallel loop, the
// process's CPU time and the line protocol between parent and child.
//
// It uses only the library's API that the last v1 commit (ac27a5b) also has (Verify), so that a child
// program built against v1 compiles it unchanged.
package e2e
