package main

import "syscall"

// childAttr makes the kernel SIGKILL a child if the soak dies without stopping it.
func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
