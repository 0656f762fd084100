# A lesson that comes before tensors: the "loss" is a Python number computed by hand
# for a grid of weights. Nothing in the file imports a tensor library, so nothing holds a graph.
import numpy as np

x_data = [1.0, 2.0, 3.0]
y_data = [2.0, 4.0, 6.0]


def predict(x, weight):
    return x * weight


def loss(x, y, weight):
    error = predict(x, weight) - y
    return error * error


table = []
for weight in np.arange(0.0, 4.1, 0.1):
    total = 0
    for x, y in zip(x_data, y_data):
        step_cost = loss(x, y, weight)
        total += step_cost
    table.append(total / len(x_data))
