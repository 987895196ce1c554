onmessage = e => postMessage(e.data * 10);
