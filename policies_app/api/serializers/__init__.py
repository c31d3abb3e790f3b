"""The API's serializers, one module per resource. They parse and show; the use cases decide."""
