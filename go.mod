module choir

go 1.26
