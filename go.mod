module github.com/reinhq/rein

go 1.26
