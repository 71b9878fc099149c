module github.com/dragoman-dev/dragoman/notifier

go 1.26
