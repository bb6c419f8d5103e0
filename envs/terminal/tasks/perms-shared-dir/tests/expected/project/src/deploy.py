def main():
    print("deploying")
