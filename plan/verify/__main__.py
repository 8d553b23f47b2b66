import sys

from .cli import main

sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))  # the program under mocks nests one wait per resource
sys.exit(main())
