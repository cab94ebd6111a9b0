"""Round-trip check of the safetensors exchange: doubles x, adds one to ids."""
import common


def compute(inputs, config):
    return {"x_times_two": inputs["x"] * 2, "ids_plus_one": inputs["ids"] + 1}


if __name__ == "__main__":
    common.main(compute)
