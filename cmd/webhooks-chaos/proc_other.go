//go:build !linux

package main

import "syscall"

// childAttr is empty where the kernel cannot kill children with their parent.
func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
