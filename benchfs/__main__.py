from benchfs.cli.main import main

main()
