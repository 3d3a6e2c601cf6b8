from edgemem.cli import main

main()
