// Package proc reads what fleetd needs of Linux's /proc: a process's stat
// line (its parent, process group, terminal's foreground group, start
// time and CPU times) and whole /proc files read cheaply. The herdr
// bridge reads it before typing (is a pane's foreground its shell?) and
// the bench to split CPU between processes; one parser serves both, so a
// command name holding spaces or parentheses is handled once. It imports
// no fleetd package.
package proc
